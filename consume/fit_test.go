package consume

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/queenbridge/queenbridge/cursors"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
)

// A pop whose answer cannot fit its bound hands back what does not fit, as
// an acknowledgement retry of the lease (no attempt counted): a message
// larger than the bound alone refuses the pop with 413, naming it; a
// further partition's that does not fit is handed back and the rest
// answered.
func TestPopAnswerThatDoesNotFitHandsTheClaimBack(t *testing.T) {
	t.Parallel()
	t.Run("alone", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		r.store.popByKey["p"] = delivers(4, "p", 1, 5000)
		status, out := r.c.ServePop(context.Background(), tenant, jsonapi.PopRequest{Queue: "q", Partition: "p", Batch: 10}, 2000)
		for _, want := range []string{"payload 5000 bytes", "at most 2000 bytes", "pop it over HTTP", `p-1`, "partition p"} {
			if status != jsonapi.StatusTooLarge || !strings.Contains(string(out), want) {
				t.Fatalf("answered %d %s, want 413 naming %s", status, out, want)
			}
		}
		acks := r.store.ackCalls()
		if len(acks) != 1 || acks[0].pid != 4 || len(acks[0].items) != 1 || acks[0].items[0].Status != string(Retry) || acks[0].lease == nil {
			t.Fatalf("handed back as %+v", acks)
		}
		if s := r.c.Stats(); s.TooLarge != 1 || s.Released != 1 {
			t.Errorf("stats %+v", s)
		}
	})
	t.Run("second partition", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		r.marks.cands = []cursors.Candidate{{ID: 1, Name: "p1"}, {ID: 2, Name: "p2"}}
		r.store.popByID[1] = delivers(1, "p1", 1, 100)
		r.store.popByID[2] = delivers(2, "p2", 1, 5000)
		status, out := r.c.ServePop(context.Background(), tenant, jsonapi.PopRequest{Queue: "q", Batch: 10, Partitions: 2}, 3000)
		var p struct {
			Claimed  int `json:"partitionsClaimed"`
			Messages []struct {
				TransactionID string `json:"transactionId"`
			} `json:"messages"`
		}
		if status != jsonapi.StatusOK || json.Unmarshal(out, &p) != nil || len(p.Messages) != 1 || p.Messages[0].TransactionID != "p1-1" || p.Claimed != 1 {
			t.Fatalf("answered %d %s", status, out)
		}
		acks := r.store.ackCalls()
		if len(acks) != 1 || acks[0].pid != 2 || acks[0].items[0].Status != string(Retry) {
			t.Fatalf("handed back as %+v", acks)
		}
		if s := r.c.Stats(); s.TooLarge != 0 || s.Released != 1 {
			t.Errorf("stats %+v", s)
		}
	})
}

// The pops a cancel may reach: a cancel that comes first ends the pop when
// it arrives; an id in use is refused; what an answered pop delivered is
// handed to exactly one side, the cancel or the pop, however they race;
// entries are forgotten after popLinger.
func TestPendingPops(t *testing.T) {
	t.Parallel()
	p := pendingPops{byKey: map[pendingKey]*pendingPop{}}
	ctx := context.Background()
	if known, _ := p.cancel(tenant, "early"); known {
		t.Fatal("a cancel of a pop not seen yet found it")
	}
	cctx, tk, err := p.begin(ctx, tenant, "early")
	if err != nil || cctx.Err() == nil {
		t.Fatalf("a pop whose cancel came first: %v %v", err, cctx.Err())
	}
	tk.finish()
	if _, _, err := p.begin(ctx, tenant, "early"); err == nil {
		t.Fatal("an id in use was taken again")
	}
	_, other, err := p.begin(ctx, tenancy.TenantID{0xcd, 2}, "early")
	if err != nil {
		t.Fatalf("another tenant's id: %v", err)
	}
	other.finish()

	for i := 0; i < 200; i++ {
		id := "race-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		_, tk, err := p.begin(ctx, tenant, id)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var answered bool
		var released []claim
		wg.Add(2)
		go func() { defer wg.Done(); answered = tk.delivered([]claim{{pid: 1}}) }()
		go func() { defer wg.Done(); _, released = p.cancel(tenant, id) }()
		wg.Wait()
		// Exactly one side hands the claim back: the pop itself when its
		// cancel came first (delivered false), else the cancel.
		if answered != (len(released) == 1) {
			t.Fatalf("%s: answered %v and the cancel released %d", id, answered, len(released))
		}
		tk.finish()
	}

	p.mu.Lock()
	for _, e := range p.byKey {
		e.until = e.until.Add(-2 * popLinger)
	}
	p.mu.Unlock()
	p.cancel(tenant, "sweeps")
	if len(p.byKey) != 1 || p.bytes != 0 {
		t.Fatalf("%d entries holding %d bytes after their linger", len(p.byKey), p.bytes)
	}

	// What answered pops keep for a late cancel is bounded: the oldest go.
	big := claim{pid: 1, txids: []string{strings.Repeat("t", maxPendingBytes/3)}}
	for _, id := range []string{"big-1", "big-2", "big-3", "big-4"} {
		_, tk, err := p.begin(ctx, tenant, id)
		if err != nil || !tk.delivered([]claim{big}) {
			t.Fatalf("%s: %v", id, err)
		}
		tk.finish()
	}
	if _, kept := p.byKey[pendingKey{tenant, "big-1"}]; kept || p.bytes > maxPendingBytes {
		t.Fatalf("the oldest answered pop is kept (%v) and %d bytes are held", kept, p.bytes)
	}
	if _, claims := p.cancel(tenant, "big-4"); len(claims) != 1 {
		t.Fatalf("the newest answered pop's claims: %d", len(claims))
	}
}
