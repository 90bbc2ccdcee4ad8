package readside

import (
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/storage"
)

// A message's status by the groups' cursor rows (docs/admin-messages.md, "Status"), and the
// offsets a list by status walks: every offset of a partition has the
// status its bounds say it can have, and no other.
func TestMessageStatusAndBounds(t *testing.T) {
	t.Parallel()
	live := time.Now().Add(time.Minute)
	qm := func(cursor, to int64, leased bool) storage.GroupState {
		g := storage.GroupState{Group: storage.QueueMode, Cursor: cursor, DeliveredTo: to}
		if leased {
			g.LeaseExpires = live
		}
		return g
	}
	bus := func(name string, cursor int64) storage.GroupState {
		return storage.GroupState{Group: name, Cursor: cursor, DeliveredTo: cursor}
	}
	for _, c := range []struct {
		name   string
		groups []storage.GroupState
		want   string // the status of offsets 1..8, one letter each: c completed, p processing, . pending, d dead letter (offset 5 is one)
	}{
		{"no group", nil, "....d..."},
		{"queue mode, no lease", []storage.GroupState{qm(3, 3, false)}, "ccc.d..."},
		{"queue mode, an expired lease", []storage.GroupState{qm(3, 6, false)}, "ccc.d..."},
		{"queue mode, a live lease", []storage.GroupState{qm(2, 6, true)}, "ccppdp.."},
		{"a bus", []storage.GroupState{bus("a", 6), bus("b", 3)}, "ccc.d..."},
		{"hybrid: queue mode decides", []storage.GroupState{bus("a", 1), qm(4, 4, false)}, "ccccd..."},
	} {
		p := &storage.MessagePartition{ID: 1, Last: 8, Groups: c.groups}
		v := viewOf(p)
		got := ""
		for off := int64(1); off <= 8; off++ {
			s, _, _ := v.status(off, off == 5)
			got += map[string]string{"completed": "c", "processing": "p", "pending": ".", "dead_letter": "d"}[s]
			if off == 5 {
				continue // dead letters are listed from the dead letters
			}
			for _, st := range []string{"completed", "processing", "pending"} {
				lo, hi := v.bounds(st)
				if in := off > lo && off <= hi; in != (s == st) {
					t.Errorf("%s: offset %d is %s, and bounds(%s) = (%d, %d]", c.name, off, s, st, lo, hi)
				}
			}
			if lo, hi := v.bounds(""); off <= lo || off > hi {
				t.Errorf("%s: bounds of any status (%d, %d] leave out %d", c.name, lo, hi, off)
			}
		}
		if got != c.want {
			t.Errorf("%s: statuses %s, want %s", c.name, got, c.want)
		}
	}
	_, _, by := viewOf(&storage.MessagePartition{Last: 8, Groups: []storage.GroupState{bus("a", 6), bus("b", 3)}}).status(4, false)
	if by != 1 {
		t.Errorf("consumed by %d named groups, want 1", by)
	}
}
