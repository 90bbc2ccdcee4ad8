package queues

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// ErrMissingKey classifies a refusal by Sealed: this bridge does not hold
// the key that seals the queue's payloads now, so a pop here would claim
// messages it cannot open.
var ErrMissingKey = errors.New("this bridge does not hold the key")

// Sealed reports whether payloads of a queue may be sealed: its settings ask
// for encryption, or a payload of it was recorded sealed under a key id (a
// queue switched back to plaintext still holds those). It refuses, with an
// error wrapping ErrMissingKey that names the queue and the key id, when
// this bridge does not hold the key the queue is sealed under now, or holds
// no key at all: a pop must then claim nothing. The queue's key id is the
// highest one any bridge sealed it with (recordKey), read with the cached
// settings, so a bridge learns of a rotation within the cache TTL.
//
// Settings that cannot be read answer sealed when this bridge has keys (a
// pop then takes the careful path) and plaintext when it has none, as
// before any key id was recorded.
func (s *Settings) Sealed(ctx context.Context, tenant tenancy.TenantID, queue string) (bool, error) {
	o, err := s.Options(ctx, tenant, queue)
	if err != nil {
		return s.sealer != nil, nil
	}
	if !o.EncryptionEnabled && !o.Keyed {
		return false, nil
	}
	switch {
	case s.sealer == nil && o.Keyed:
		return true, fmt.Errorf("queue %q is sealed under key id %d and %w: no QUEEN_ENCRYPTION_KEY is configured", queue, o.KeyID, ErrMissingKey)
	case s.sealer == nil:
		return true, fmt.Errorf("queue %q holds encrypted messages and %w: no QUEEN_ENCRYPTION_KEY is configured", queue, ErrMissingKey)
	case o.Keyed && s.sealer.keys[o.KeyID] == nil:
		return true, fmt.Errorf("queue %q is sealed under key id %d and %w (it holds key ids %s): add it to QUEEN_ENCRYPTION_KEY, or pop through a bridge that has it",
			queue, o.KeyID, ErrMissingKey, s.sealer.ids())
	}
	return true, nil
}

// recordKey records, once per queue and bridge, that this bridge seals the
// queue's payloads under a newer key than the queue's recorded one, so that
// every bridge still without that key refuses pops of the queue instead of
// claiming what it cannot open. A failure is not the push's: its payloads
// are sealed all the same, and the next request tries again.
func (s *Settings) recordKey(ctx context.Context, tenant tenancy.TenantID, queue string) {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	q, found, err := s.cfg.DB.RecordKeyID(rctx, tenant, queue, s.sealer.current)
	if err == nil && found {
		s.cache.put(key{tenant, queue}, q.Options)
	}
}

// ids lists the key ids held, newest first ("3, 1").
func (s *sealer) ids() string {
	var b strings.Builder
	for id := 255; id >= 0; id-- {
		if s.keys[uint8(id)] == nil {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(id))
	}
	return b.String()
}
