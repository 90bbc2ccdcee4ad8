package jsonscan

import (
	"encoding/binary"
	"math/rand"
	"testing"
)

// specialInWord agrees with a byte-by-byte check: every special byte in
// every position, and random words.
func TestSpecialInWordMatchesBytes(t *testing.T) {
	brute := func(b []byte) bool {
		for _, c := range b {
			if c == '"' || c == '\\' || c < 0x20 {
				return true
			}
		}
		return false
	}
	check := func(b []byte) {
		if got, want := specialInWord(binary.LittleEndian.Uint64(b)), brute(b); got != want {
			t.Fatalf("% x: %v, want %v", b, got, want)
		}
	}
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 8; pos++ {
			b := []byte("abcdefgh")
			b[pos] = byte(c)
			check(b)
		}
	}
	rng := rand.New(rand.NewSource(1))
	b := make([]byte, 8)
	for i := 0; i < 200000; i++ {
		rng.Read(b)
		check(b)
	}
}
