package bridge

import "testing"

// smallMap answers like a map, below and past the size where it switches.
func TestSmallMapMatchesAMap(t *testing.T) {
	var s smallMap[[2]string, int]
	want := map[[2]string]int{}
	for i := 0; i < 3*smallMapMax; i++ {
		k := [2]string{"q", string(rune('a' + i))}
		if _, ok := s.get(k); ok {
			t.Fatalf("key %v found before it was put", k)
		}
		s.put(k, i)
		want[k] = i
		for wk, wv := range want {
			if v, ok := s.get(wk); !ok || v != wv {
				t.Fatalf("after %d puts: %v = %d, %v; want %d", i+1, wk, v, ok, wv)
			}
		}
	}
	if s.m == nil {
		t.Fatal("the map was never built past the arrays")
	}
	s.set([2]string{"q", "a"}, 100)
	seen := 0
	s.each(func(k [2]string, v int) {
		seen++
		if w := want[k]; k == ([2]string{"q", "a"}) && v != 100 || k != ([2]string{"q", "a"}) && v != w {
			t.Fatalf("each: %v = %d", k, v)
		}
	})
	if seen != len(want) {
		t.Fatalf("each visited %d of %d", seen, len(want))
	}
}
