package recent

import (
	"testing"
	"time"
)

// The forgotten range follows the window: once the oldest forgotten frames
// are older than the window, its floor moves up to newer forgotten ones.
func TestForgottenRangeMovesWithTheWindow(t *testing.T) {
	s := testTable(16) // chunks of one entry
	window := 10 * time.Second
	t0 := time.Now()
	for off := int64(1); off <= 40; off++ {
		at := t0.Add(time.Duration(off) * time.Second / 4) // 4 per second
		s.Add([16]byte{byte(off)}, off, at, at, window)
	}
	now := t0.Add(10 * time.Second)
	if lo, hi := s.ForgottenRange(now, window); lo != 1 || hi != 24 {
		t.Fatalf("forgotten [%d, %d] at t0+10s, want [1, 24]", lo, hi)
	}
	// 5 s later, offsets added before t0+5s are out of the window.
	later := now.Add(5 * time.Second)
	if got, _ := s.ForgottenRange(later, window); got < 20 || got > 24 {
		t.Fatalf("floor %d at t0+15s, want the first in-window forgotten offset (20..24)", got)
	}
	if s.Len() > 16 {
		t.Fatalf("set holds %d, capacity 16", s.Len())
	}
	if _, ok := s.Lookup([16]byte{40}, later, window); !ok {
		t.Fatal("the newest entry must still be held")
	}
}
