package queues

import (
	"bytes"
	"errors"
	"testing"

	"github.com/queenbridge/queenbridge/segment"
)

// A sealed payload opens only for the tenant, queue and partition it was
// sealed for, under the highest key id, with any sealer that has that key.
func TestSealedPayloadsAreBoundToTheirPartition(t *testing.T) {
	k1, k7 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{7}, 32)
	s, err := newSealer(map[uint8][]byte{1: k1, 7: k7})
	if err != nil {
		t.Fatal(err)
	}
	tenant := [16]byte{3}
	sealed, flags := s.seal(tenant, "q", "p", []byte("hello"))
	if flags != segment.FlagEncrypted|segment.FlagKeyed || sealed[0] != 7 || bytes.Contains(sealed, []byte("hello")) {
		t.Fatalf("flags %b, key %d", flags, sealed[0])
	}
	if plain, err := s.open(tenant, "q", "p", flags, sealed); err != nil || string(plain) != "hello" {
		t.Fatalf("open: %q %v", plain, err)
	}
	for _, other := range []struct {
		tenant [16]byte
		q, p   string
	}{{[16]byte{4}, "q", "p"}, {tenant, "q2", "p"}, {tenant, "q", "p2"}, {tenant, "qp", ""}, {tenant, "", "qp"}} {
		if _, err := s.open(other.tenant, other.q, other.p, flags, sealed); err == nil {
			t.Errorf("opened as tenant %d, queue %q, partition %q", other.tenant[0], other.q, other.p)
		}
	}
	only1, _ := newSealer(map[uint8][]byte{1: k1})
	if _, err := only1.open(tenant, "q", "p", flags, sealed); !errors.Is(err, errUnknownKey) {
		t.Fatalf("without key 7: %v", err)
	}
	only7, _ := newSealer(map[uint8][]byte{7: k7})
	if plain, err := only7.open(tenant, "q", "p", flags, sealed); err != nil || string(plain) != "hello" {
		t.Fatalf("with key 7 alone: %q %v", plain, err)
	}
	if _, err := newSealer(map[uint8][]byte{1: k1[:16]}); err == nil {
		t.Fatal("a 16-byte key was accepted")
	}
}
