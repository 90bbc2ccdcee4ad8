package auth

import (
	"strings"
	"testing"
)

func TestSubjectTenant(t *testing.T) {
	t.Parallel()
	const base = "queen.v1.push"
	const id = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	want := [16]byte{0x0a, 0x1b, 0x2c, 0x3d, 0x4e, 0x5f, 0x4a, 0x6b, 0x8c, 0x7d, 0x9e, 0x0f, 0x1a, 0x2b, 0x3c, 0x4d}
	for _, c := range []struct {
		subject string
		tenant  [16]byte
		ok      bool
	}{
		{base, [16]byte{}, true},
		{base + "." + id, want, true},
		{base + ".not-a-uuid", [16]byte{}, false},
		{base + "." + id[:35], [16]byte{}, false},
		{base + "." + id + ".more", [16]byte{}, false},
		{base + ".", [16]byte{}, false},
		{base + "x." + id, [16]byte{}, false},
		{base + id, [16]byte{}, false},
		{id, [16]byte{}, false}, // a UUID, but not under base
		{"queen.v1.pop." + id, [16]byte{}, false},
		{"other.v1.push", [16]byte{}, false},
	} {
		got, err := SubjectTenant(c.subject, base)
		if (err == nil) != c.ok || got != c.tenant {
			t.Errorf("SubjectTenant(%q) = %x, %v", c.subject, got, err)
		}
		if err != nil && !strings.Contains(err.Error(), c.subject) {
			t.Errorf("the error does not name the subject %q: %v", c.subject, err)
		}
	}
}
