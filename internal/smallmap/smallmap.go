package smallmap

// Map finds values by key: by scanning its arrays while it holds few
// entries (the usual push has one to a few items), by a map beyond that.
// Building three maps was most of a one-item push's allocations; as a local
// variable a Map stays on the stack until it outgrows the arrays.
type Map[K comparable, V any] struct {
	n    int
	keys [arrayMax]K
	vals [arrayMax]V
	m    map[K]V
}

const arrayMax = 8

// Get returns the value of k and whether it is present.
func (s *Map[K, V]) Get(k K) (V, bool) {
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

// Put sets k to v (k must not be present yet).
func (s *Map[K, V]) Put(k K, v V) {
	if s.m == nil && s.n < arrayMax {
		s.keys[s.n], s.vals[s.n] = k, v
		s.n++
		return
	}
	if s.m == nil {
		s.m = make(map[K]V, 4*arrayMax)
		for i := 0; i < s.n; i++ {
			s.m[s.keys[i]] = s.vals[i]
		}
	}
	s.m[k] = v
}

// Set replaces the value of k, which must be present.
func (s *Map[K, V]) Set(k K, v V) {
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

// Each calls fn for every entry.
func (s *Map[K, V]) Each(fn func(K, V)) {
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
