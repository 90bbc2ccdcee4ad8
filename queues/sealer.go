package queues

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/segment"
)

// sealer encrypts payloads of encrypted queues with AES-256-GCM. Several keys
// may be configured, each with an id (0..255): the highest id seals, every
// one opens, so a key is rotated by adding a higher one and dropping the old
// one only once nothing it sealed is kept any more.
//
// A payload sealed here is keyID (1 byte) || nonce (12) || ciphertext || tag,
// flagged segment.FlagEncrypted|segment.FlagKeyed, with associated data that
// binds it to its tenant, queue and partition and key id: moved to another
// queue (by anyone with SQL access), it no longer opens. Payloads sealed
// before key ids existed (FlagEncrypted alone: nonce || ciphertext || tag, no
// associated data) still open, with whichever configured key sealed them.
//
// Safe for concurrent use: nothing changes after construction.
type sealer struct {
	keys    map[uint8]cipher.AEAD
	current uint8         // the id that seals
	byAge   []cipher.AEAD // every key, newest id first: tried on unkeyed payloads
}

func newSealer(keys map[uint8][]byte) (*sealer, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	s := &sealer{keys: map[uint8]cipher.AEAD{}}
	ids := make([]int, 0, len(keys))
	for id, key := range keys {
		if len(key) != 32 {
			return nil, fmt.Errorf("queues: encryption key %d must be 32 bytes (64 hex characters), got %d bytes", id, len(key))
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("queues: encryption key %d: %w", id, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("queues: encryption key %d: %w", id, err)
		}
		s.keys[id] = aead
		ids = append(ids, int(id))
	}
	sort.Sort(sort.Reverse(sort.IntSlice(ids)))
	s.current = uint8(ids[0])
	for _, id := range ids {
		s.byAge = append(s.byAge, s.keys[uint8(id)])
	}
	return s, nil
}

// associated is what a sealed payload is bound to.
func associated(keyID uint8, tenant tenancy.TenantID, queue, partition string) []byte {
	ad := make([]byte, 0, 16+1+16+2*binary.MaxVarintLen64+len(queue)+len(partition))
	ad = append(ad, "queen-payload-v1"...)
	ad = append(ad, keyID)
	ad = append(ad, tenant[:]...)
	ad = binary.AppendUvarint(ad, uint64(len(queue)))
	ad = append(ad, queue...)
	ad = binary.AppendUvarint(ad, uint64(len(partition)))
	return append(ad, partition...)
}

// seal encrypts plain for (tenant, queue, partition) under the current key.
func (s *sealer) seal(tenant tenancy.TenantID, queue, partition string, plain []byte) ([]byte, uint8) {
	aead := s.keys[s.current]
	n := aead.NonceSize()
	out := make([]byte, 1+n, 1+n+len(plain)+aead.Overhead())
	out[0] = s.current
	if _, err := rand.Read(out[1:]); err != nil {
		panic(fmt.Sprintf("queues: no randomness for a nonce: %v", err))
	}
	out = aead.Seal(out, out[1:1+n], plain, associated(s.current, tenant, queue, partition))
	return out, segment.FlagEncrypted | segment.FlagKeyed
}

// errUnknownKey: the payload names a key id this bridge is not given.
var errUnknownKey = errors.New("sealed with a key id that is not configured")

// open decrypts a stored payload of (tenant, queue, partition).
func (s *sealer) open(tenant tenancy.TenantID, queue, partition string, flags uint8, sealed []byte) ([]byte, error) {
	if flags&segment.FlagKeyed == 0 {
		return s.openUnkeyed(sealed)
	}
	if len(sealed) < 1 {
		return nil, errors.New("encrypted payload is empty")
	}
	aead, ok := s.keys[sealed[0]]
	if !ok {
		return nil, fmt.Errorf("%w (%d)", errUnknownKey, sealed[0])
	}
	n := aead.NonceSize()
	if len(sealed) < 1+n+aead.Overhead() {
		return nil, fmt.Errorf("encrypted payload of %d bytes is too short", len(sealed))
	}
	plain, err := aead.Open(nil, sealed[1:1+n], sealed[1+n:], associated(sealed[0], tenant, queue, partition))
	if err != nil {
		return nil, fmt.Errorf("sealed under key id %d: %w", sealed[0], err)
	}
	return plain, nil
}

// openUnkeyed opens a payload sealed before key ids: nonce || ciphertext ||
// tag, no associated data, under one of the configured keys.
func (s *sealer) openUnkeyed(sealed []byte) ([]byte, error) {
	var err error
	for _, aead := range s.byAge {
		n := aead.NonceSize()
		if len(sealed) < n+aead.Overhead() {
			return nil, fmt.Errorf("encrypted payload of %d bytes is too short", len(sealed))
		}
		var plain []byte
		if plain, err = aead.Open(nil, sealed[:n], sealed[n:], nil); err == nil {
			return plain, nil
		}
	}
	return nil, err
}
