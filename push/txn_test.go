package push_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/push"
	"github.com/queenbridge/queenbridge/segment"
)

// A transaction's pushes are prepared as a push's (ids, transactionIds,
// sealing, one segment per partition) and handed back: nothing is
// submitted, forwarded or spooled, whatever the outcome.
func TestPrepareTxn(t *testing.T) {
	t.Parallel()
	tenant := tenancy.TenantID{2}
	for _, c := range []struct {
		name  string
		items []jsonapi.Item
		check func(t *testing.T, p push.Prepared, err error)
	}{
		{
			name:  "a repeat is an error naming both items",
			items: []jsonapi.Item{item("q", "a", "t1"), item("q", "b", "t1"), item("q", "a", "t1")},
			check: func(t *testing.T, _ push.Prepared, err error) {
				var rep *push.RepeatError
				if !errors.As(err, &rep) || *rep != (push.RepeatError{Index: 2, First: 0, TransactionID: "t1", Queue: "q", Partition: "a"}) {
					t.Errorf("err %v; want item 2 repeating item 0", err)
				}
			},
		},
		{
			name:  "an item of a queue without its key is an error naming it",
			items: []jsonapi.Item{item("q", "a", "t1"), item("keyless", "a", "t2")},
			check: func(t *testing.T, _ push.Prepared, err error) {
				var bad *push.ItemError
				if !errors.As(err, &bad) || bad.Index != 1 || !strings.Contains(bad.Err, "no key") {
					t.Errorf("err %v; want item 1 without a key", err)
				}
			},
		},
		{
			name:  "one segment per partition, probed where a client named a transactionId",
			items: []jsonapi.Item{item("q", "a", ""), item("q", "b", "t2"), item("q", "a", ""), item("secret", "a", "t3")},
			check: func(t *testing.T, p push.Prepared, err error) {
				if err != nil {
					t.Fatal(err)
				}
				want := []struct {
					queue, partition string
					count            int32
					verified         int64
				}{{"q", "a", 2, push.NoProbe}, {"q", "b", 1, 0}, {"secret", "a", 1, 0}}
				if len(p.Writes) != len(want) {
					t.Fatalf("%d writes; want %d", len(p.Writes), len(want))
				}
				for i, w := range want {
					g := p.Writes[i]
					if g.Tenant != tenant || g.Queue != w.queue || g.Partition != w.partition || g.Count != w.count || g.Verified != w.verified ||
						len(g.Hashes) != int(w.count)*segment.HashSize {
						t.Errorf("write %d: %s/%s count %d verified %d; want %+v", i, g.Queue, g.Partition, g.Count, g.Verified, w)
					}
				}
				at := [][2]int{{0, 0}, {1, 0}, {0, 1}, {2, 0}}
				for i, it := range p.Items {
					if [2]int{it.Write, it.Frame} != at[i] {
						t.Errorf("item %d in write %d frame %d; want %v", i, it.Write, it.Frame, at[i])
					}
					f, err := segment.Unpack(p.Writes[it.Write].Blob, it.Frame)
					if err != nil || f.ID != it.ID || f.TransactionID != it.TransactionID {
						t.Errorf("item %d: frame %+v %v; prepared %+v", i, f, err, it)
					}
				}
				if p.Items[0].TransactionID != uuid.UUID(p.Items[0].ID).String() || p.Items[1].TransactionID != "t2" {
					t.Errorf("transactionIds %q %q", p.Items[0].TransactionID, p.Items[1].TransactionID)
				}
				if f, _ := segment.Unpack(p.Writes[2].Blob, 0); string(f.Payload) != `sealed:{"tx":"t3"}` || f.Flags != segment.FlagEncrypted {
					t.Errorf("secret's frame %q flags %b; want it sealed", f.Payload, f.Flags)
				}
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRig()
			r.start(t)
			p, err := r.p.PrepareTxn(context.Background(), tenant, c.items)
			c.check(t, p, err)
			r.wroteNothing(t)
		})
	}
}
