package bridge

// smallMap finds values by key: by scanning its arrays while it holds few
// entries (the usual push has one to a few items), by a map beyond that.
// Building three maps was most of a one-item push's allocations; as a local
// variable a smallMap stays on the stack until it outgrows the arrays.
type smallMap[K comparable, V any] struct {
	n    int
	keys [smallMapMax]K
	vals [smallMapMax]V
	m    map[K]V
}

const smallMapMax = 8

func (s *smallMap[K, V]) get(k K) (V, bool) {
	if s.m != nil {
		v, ok := s.m[k]
		return v, ok
	}
	for i := 0; i < s.n; i++ {
		if s.keys[i] == k {
			return s.vals[i], true
		}
	}
	var zero V
	return zero, false
}

// put sets k to v (k must not be present yet).
func (s *smallMap[K, V]) put(k K, v V) {
	if s.m == nil && s.n < smallMapMax {
		s.keys[s.n], s.vals[s.n] = k, v
		s.n++
		return
	}
	if s.m == nil {
		s.m = make(map[K]V, 4*smallMapMax)
		for i := 0; i < s.n; i++ {
			s.m[s.keys[i]] = s.vals[i]
		}
	}
	s.m[k] = v
}

// set replaces the value of k, which must be present.
func (s *smallMap[K, V]) set(k K, v V) {
	if s.m != nil {
		s.m[k] = v
		return
	}
	for i := 0; i < s.n; i++ {
		if s.keys[i] == k {
			s.vals[i] = v
			return
		}
	}
}

// each calls fn for every entry.
func (s *smallMap[K, V]) each(fn func(K, V)) {
	if s.m != nil {
		for k, v := range s.m {
			fn(k, v)
		}
		return
	}
	for i := 0; i < s.n; i++ {
		fn(s.keys[i], s.vals[i])
	}
}
