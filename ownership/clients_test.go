package ownership

import "testing"

// The owners' table as clients read it: Queen's field names, bridge ids
// escaped, the tenant only when set.
func TestOwnersTableJSON(t *testing.T) {
	t.Parallel()
	table := OwnersTable{Version: "v-3", Buckets: 4,
		Bridges: []OwnerEntry{{ID: "b1", Subject: "queen.v1.push.b1"}, {ID: "b\"2", Subject: "queen.v1.push.b2"}},
		Owners:  []int32{0, 1, 1, 0}}
	for _, c := range []struct {
		table *OwnersTable
		want  string
	}{
		{&table, `{"version":"v-3","buckets":4,"bridges":[{"id":"b1","subject":"queen.v1.push.b1"},` +
			`{"id":"b\"2","subject":"queen.v1.push.b2"}],"owners":[0,1,1,0]}`},
		{&OwnersTable{Version: "v", Tenant: "01234567-89ab-cdef-0123-456789abcdef"},
			`{"version":"v","tenant":"01234567-89ab-cdef-0123-456789abcdef","buckets":0,"bridges":null,"owners":null}`},
	} {
		if got := string(appendOwners(nil, c.table)); got != c.want {
			t.Errorf("body\n got %s\nwant %s", got, c.want)
		}
	}
}
