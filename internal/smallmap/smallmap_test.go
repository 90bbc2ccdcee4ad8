package smallmap

import "testing"

// Map answers like a map, below and past the size where it switches.
func TestSmallMapMatchesAMap(t *testing.T) {
	var s Map[[2]string, int]
	want := map[[2]string]int{}
	for i := 0; i < 3*arrayMax; i++ {
		k := [2]string{"q", string(rune('a' + i))}
		if _, ok := s.Get(k); ok {
			t.Fatalf("key %v found before it was put", k)
		}
		s.Put(k, i)
		want[k] = i
		for wk, wv := range want {
			if v, ok := s.Get(wk); !ok || v != wv {
				t.Fatalf("after %d puts: %v = %d, %v; want %d", i+1, wk, v, ok, wv)
			}
		}
	}
	if s.m == nil {
		t.Fatal("the map was never built past the arrays")
	}
	s.Set([2]string{"q", "a"}, 100)
	seen := 0
	s.Each(func(k [2]string, v int) {
		seen++
		if w := want[k]; k == ([2]string{"q", "a"}) && v != 100 || k != ([2]string{"q", "a"}) && v != w {
			t.Fatalf("each: %v = %d", k, v)
		}
	})
	if seen != len(want) {
		t.Fatalf("each visited %d of %d", seen, len(want))
	}
}
