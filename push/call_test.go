package push_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/push"
	"github.com/queenbridge/queenbridge/readside"
	"github.com/queenbridge/queenbridge/segment"
)

// frameTx lists a submission's transactionIds, in frame order.
func frameTx(s fusion.Submission) []string {
	var out []string
	for _, f := range s.Frames {
		out = append(out, f.TransactionID)
	}
	return out
}

func TestPushAnswersEachItem(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		setup  func(r *rig)
		items  []jsonapi.Item
		status int
		want   []string // each item's status
		check  func(t *testing.T, r *rig, rs []result)
	}{
		{
			name:   "grouped per queue and partition, in request order",
			items:  []jsonapi.Item{item("q", "a", "t1"), item("q", "b", "t2"), item("q", "a", "t3"), item("r", "a", "t4")},
			status: jsonapi.StatusCreated,
			want:   []string{"queued", "queued", "queued", "queued"},
			check: func(t *testing.T, r *rig, rs []result) {
				subs := r.fu.submissions()
				if len(subs) != 3 {
					t.Fatalf("%d submissions; want one per (queue, partition)", len(subs))
				}
				for i, w := range []struct {
					queue, partition string
					tx               []string
				}{{"q", "a", []string{"t1", "t3"}}, {"q", "b", []string{"t2"}}, {"r", "a", []string{"t4"}}} {
					s := subs[i]
					if s.Queue != w.queue || s.Partition != w.partition || !slices.Equal(frameTx(s), w.tx) || s.Tenant != (tenancy.TenantID{1}) || s.Minted != nil {
						t.Errorf("submission %d: %s/%s %v tenant %x minted %v; want %s/%s %v", i, s.Queue, s.Partition, frameTx(s), s.Tenant, s.Minted, w.queue, w.partition, w.tx)
					}
				}
				if got := []int64{rs[0].Offset, rs[1].Offset, rs[2].Offset, rs[3].Offset}; !slices.Equal(got, []int64{0, 0, 1, 0}) {
					t.Errorf("offsets %v", got)
				}
				if rs[0].MessageID != uuid.UUID(subs[0].Frames[0].ID).String() || rs[2].MessageID != uuid.UUID(subs[0].Frames[1].ID).String() || rs[0].MessageID == rs[2].MessageID {
					t.Errorf("message ids %s %s; frames %x %x", rs[0].MessageID, rs[2].MessageID, subs[0].Frames[0].ID, subs[0].Frames[1].ID)
				}
				if n := r.sealer.lookupsOf("q"); n != 1 {
					t.Errorf("queue q's settings asked %d times; want once per request", n)
				}
				keys := r.reads.announced()
				want := []readside.Key{{Tenant: tenancy.TenantID{1}, Queue: "q", Partition: "a"}, {Tenant: tenancy.TenantID{1}, Queue: "q", Partition: "b"},
					{Tenant: tenancy.TenantID{1}, Queue: "r", Partition: "a"}}
				if !slices.Equal(keys, want) {
					t.Errorf("announced %v; want %v", keys, want)
				}
			},
		},
		{
			name:   "a repeat inside the request follows its leader",
			items:  []jsonapi.Item{item("q", "a", "t1"), item("q", "a", "t1"), item("q", "b", "t1"), item("q", "a", "t1")},
			status: jsonapi.StatusCreated,
			want:   []string{"queued", "duplicate", "queued", "duplicate"},
			check: func(t *testing.T, r *rig, rs []result) {
				subs := r.fu.submissions()
				if len(subs) != 2 || !slices.Equal(frameTx(subs[0]), []string{"t1"}) || !slices.Equal(frameTx(subs[1]), []string{"t1"}) {
					t.Fatalf("submissions %+v; want one frame in each partition", subs)
				}
				for _, f := range []int{1, 3} {
					if rs[f].MessageID != rs[0].MessageID || rs[f].Offset != rs[0].Offset || rs[f].TransactionID != "t1" {
						t.Errorf("follower %d: %+v; leader %+v", f, rs[f], rs[0])
					}
				}
				if rs[2].MessageID == rs[0].MessageID {
					t.Error("the same transactionId in another partition shares its leader's message")
				}
			},
		},
		{
			name:   "a stored transactionId is a duplicate, and so is its follower",
			setup:  func(r *rig) { r.fu.stored = map[string]bool{"t9": true} },
			items:  []jsonapi.Item{item("q", "a", "t9"), item("q", "a", "t9"), item("q", "a", "t1")},
			status: jsonapi.StatusCreated,
			want:   []string{"duplicate", "duplicate", "queued"},
			check: func(t *testing.T, r *rig, rs []result) {
				orig := uuid.UUID(originalID).String()
				for _, i := range []int{0, 1} {
					if rs[i].MessageID != orig || rs[i].Offset != 99 {
						t.Errorf("item %d: %+v; want the original %s at 99", i, rs[i], orig)
					}
				}
				if rs[2].Offset != 0 {
					t.Errorf("item 2 at %d", rs[2].Offset)
				}
				keys := r.reads.announced()
				if len(keys) != 1 || keys[0].Partition != "a" {
					t.Errorf("announced %v", keys)
				}
			},
		},
		{
			name:   "a failed write is spooled and answered buffered, its follower too",
			setup:  func(r *rig) { r.fu.failing = map[string]bool{"a": true} },
			items:  []jsonapi.Item{item("q", "a", "t1"), item("q", "a", "t1"), item("q", "b", "t2"), item("q", "a", "t3")},
			status: jsonapi.StatusCreated,
			want:   []string{"buffered", "buffered", "queued", "buffered"},
			check: func(t *testing.T, r *rig, rs []result) {
				recs := r.keeper.records()
				if len(recs) != 2 {
					t.Fatalf("%d spooled; want the two leaders of q/a", len(recs))
				}
				for k, i := range []int{0, 3} {
					f := recs[k]
					if f.Queue != "q" || f.Partition != "a" || uuid.UUID(f.Frame.ID).String() != rs[i].MessageID || f.Frame.TransactionID != rs[i].TransactionID ||
						!bytes.Equal(f.Frame.Payload, item("q", "a", rs[i].TransactionID).Payload) {
						t.Errorf("spooled %s/%s %+v; answered %+v", f.Queue, f.Partition, f.Frame, rs[i])
					}
				}
				if rs[1].MessageID != rs[0].MessageID {
					t.Errorf("follower %s, leader %s", rs[1].MessageID, rs[0].MessageID)
				}
				if keys := r.reads.announced(); len(keys) != 1 || keys[0].Partition != "b" {
					t.Errorf("announced %v; want only what was written", keys)
				}
			},
		},
		{
			name: "a spool that fails the write: failed, with both reasons",
			setup: func(r *rig) {
				r.fu.failing = map[string]bool{"a": true}
				r.keeper.spoolErr = errors.New("disk full")
			},
			items:  []jsonapi.Item{item("q", "a", "t1"), item("q", "b", "t2")},
			status: jsonapi.StatusInternalServerError,
			want:   []string{"failed", "queued"},
			check: func(t *testing.T, r *rig, rs []result) {
				if e := rs[0].Error; !strings.Contains(e, "spool write failed: disk full") || !strings.Contains(e, errTimeout.Error()) {
					t.Errorf("error %q", e)
				}
			},
		},
		{
			name: "no spool: failed with the write's reason",
			setup: func(r *rig) {
				r.fu.failing = map[string]bool{"a": true}
				r.keeper.noSpool = true
			},
			items:  []jsonapi.Item{item("q", "a", "t1"), item("q", "a", "t1")},
			status: jsonapi.StatusInternalServerError,
			want:   []string{"failed", "failed"},
			check: func(t *testing.T, r *rig, rs []result) {
				if rs[0].Error != "write failed: "+errTimeout.Error() || rs[1].Error != rs[0].Error {
					t.Errorf("errors %q %q", rs[0].Error, rs[1].Error)
				}
				if n := len(r.keeper.records()); n != 0 {
					t.Errorf("%d spooled", n)
				}
			},
		},
		{
			name:   "a group fusion does not take is spooled",
			setup:  func(r *rig) { r.fu.refusing = map[string]bool{"a": true} },
			items:  []jsonapi.Item{item("q", "a", "t1"), item("q", "b", "t2")},
			status: jsonapi.StatusCreated,
			want:   []string{"buffered", "queued"},
			check: func(t *testing.T, r *rig, rs []result) {
				if recs := r.keeper.records(); len(recs) != 1 || recs[0].Frame.TransactionID != "t1" {
					t.Errorf("spooled %+v", recs)
				}
			},
		},
		{
			name:   "maintenance: every leader spooled, nothing submitted or announced",
			setup:  func(r *rig) { r.keeper.maintenance = true },
			items:  []jsonapi.Item{item("q", "a", "t1"), item("q", "b", "t2"), item("q", "a", "t1")},
			status: jsonapi.StatusCreated,
			want:   []string{"buffered", "buffered", "buffered"},
			check: func(t *testing.T, r *rig, rs []result) {
				if n := len(r.fu.submissions()); n != 0 {
					t.Errorf("%d submissions in maintenance", n)
				}
				if recs := r.keeper.records(); len(recs) != 2 {
					t.Errorf("spooled %d; want the two leaders", len(recs))
				}
				if keys := r.reads.announced(); len(keys) != 0 {
					t.Errorf("announced %v", keys)
				}
			},
		},
		{
			name: "sealed where the queue asks; a queue without its key fails alone",
			items: []jsonapi.Item{item("secret", "a", "t1"), item("keyless", "a", "t2"), item("q", "a", "t3"), item("keyless", "b", "t4"),
				{Queue: "secret", Partition: "a", TransactionID: "t5", Payload: []byte(`"AAEC"`), Encoded: true}},
			status: jsonapi.StatusInternalServerError,
			want:   []string{"queued", "failed", "queued", "failed", "queued"},
			check: func(t *testing.T, r *rig, rs []result) {
				subs := r.fu.submissions()
				if len(subs) != 2 || subs[0].Queue != "secret" || subs[1].Queue != "q" {
					t.Fatalf("submissions %+v; want secret/a and q/a", subs)
				}
				sealed := subs[0].Frames
				if string(sealed[0].Payload) != `sealed:{"tx":"t1"}` || sealed[0].Flags != segment.FlagEncrypted {
					t.Errorf("sealed frame %q flags %b", sealed[0].Payload, sealed[0].Flags)
				}
				if sealed[1].Flags != segment.FlagEncrypted|segment.FlagBase64 {
					t.Errorf("a sealed base64 payload has flags %b; want both", sealed[1].Flags)
				}
				if f := subs[1].Frames[0]; string(f.Payload) != `{"tx":"t3"}` || f.Flags != 0 {
					t.Errorf("plain frame %q flags %b", f.Payload, f.Flags)
				}
				if !strings.Contains(rs[1].Error, "no key") || rs[3].Error != rs[1].Error || rs[1].MessageID != "" {
					t.Errorf("keyless answers %+v %+v", rs[1], rs[3])
				}
				if n := r.sealer.lookupsOf("keyless"); n != 1 {
					t.Errorf("keyless asked %d times", n)
				}
			},
		},
		{
			name:   "a transactionId minted here is the message id",
			items:  []jsonapi.Item{item("q", "a", ""), item("q", "a", "t2"), item("q", "a", "")},
			status: jsonapi.StatusCreated,
			want:   []string{"queued", "queued", "queued"},
			check: func(t *testing.T, r *rig, rs []result) {
				for _, i := range []int{0, 2} {
					if rs[i].TransactionID == "" || rs[i].TransactionID != rs[i].MessageID {
						t.Errorf("item %d: transactionId %q, message %q", i, rs[i].TransactionID, rs[i].MessageID)
					}
				}
				if rs[0].TransactionID == rs[2].TransactionID {
					t.Error("two items without transactionId share one")
				}
				if m := r.fu.submissions()[0].Minted; !slices.Equal(m, []bool{true, false, true}) {
					t.Errorf("minted %v", m)
				}
			},
		},
		{
			name:   "a group another bridge owns is forwarded to it",
			setup:  func(r *rig) { r.owners.owner = map[string]string{"far": "b2"} },
			items:  []jsonapi.Item{item("q", "far", "t1"), item("q", "a", "t2"), item("q", "far", "t1")},
			status: jsonapi.StatusCreated,
			want:   []string{"queued", "queued", "duplicate"},
			check: func(t *testing.T, r *rig, rs []result) {
				fw := r.owners.groups()
				if len(fw) != 1 || fw[0].Partition != "far" || len(fw[0].Frames) != 1 {
					t.Fatalf("forwarded %+v", fw)
				}
				if subs := r.fu.submissions(); len(subs) != 1 || subs[0].Partition != "a" {
					t.Errorf("submitted here %+v", subs)
				}
				if rs[0].Offset != 1000 || rs[2].Offset != 1000 {
					t.Errorf("answers %+v %+v; want the owner's verdict", rs[0], rs[2])
				}
			},
		},
		{
			name: "a forward the owner refuses is written here",
			setup: func(r *rig) {
				r.owners.owner = map[string]string{"far": "b2"}
				r.owners.refuse = true
			},
			items:  []jsonapi.Item{item("q", "far", "t1"), item("q", "far", "")},
			status: jsonapi.StatusCreated,
			want:   []string{"queued", "queued"},
			check: func(t *testing.T, r *rig, rs []result) {
				if n := len(r.owners.groups()); n != 1 {
					t.Errorf("forwarded %d groups", n)
				}
				subs := r.fu.submissions()
				if len(subs) != 1 || subs[0].Partition != "far" || subs[0].Minted != nil || rs[0].Offset != 0 || rs[1].Offset != 1 {
					t.Errorf("written here %+v; answers %+v", subs, rs)
				}
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRig()
			if c.setup != nil {
				c.setup(r)
			}
			r.start(t)
			status, body := r.push(t, c.items)
			rs := results(t, body)
			if status != c.status || len(rs) != len(c.want) {
				t.Fatalf("%d %s; want %d with %d results", status, body, c.status, len(c.want))
			}
			counts := map[string]int{}
			for i, res := range rs {
				counts[res.Status]++
				it := c.items[i]
				if res.Index != i || res.Status != c.want[i] || res.Queue != it.Queue || res.Partition != it.Partition ||
					(it.TransactionID != "" && res.TransactionID != it.TransactionID) {
					t.Errorf("item %d: %+v; want %s", i, res, c.want[i])
				}
			}
			c.check(t, r, rs)
			requests, items := r.obs.counts()
			if requests["http"] != 1 || !equalCounts(items, counts) {
				t.Errorf("observed requests %v items %v; want 1 and %v", requests, items, counts)
			}
		})
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A push refused whole writes nothing, spools nothing and announces
// nothing; it is counted as a request.
func TestPushRefusalsWriteNothing(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		maxParts int
		stopping bool
		items    []jsonapi.Item
		status   int
		body     string
	}{
		{"too many partitions", 2, false, []jsonapi.Item{item("q", "a", "1"), item("q", "b", "2"), item("r", "a", "3")},
			jsonapi.StatusBadRequest, `{"error":"the request names 3 partitions; at most 2 per request"}`},
		{"stopping, before any other check", 2, true, []jsonapi.Item{item("q", "a", "1"), item("q", "b", "2"), item("r", "a", "3")},
			jsonapi.StatusServiceUnavailable, `{"error":"` + push.ErrStopping + `"}`},
		{"stopping", 0, true, []jsonapi.Item{item("q", "a", "1")}, jsonapi.StatusServiceUnavailable, `{"error":"` + push.ErrStopping + `"}`},
		{"no items", 0, false, nil, jsonapi.StatusCreated, `[]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRig()
			r.maxParts, r.stopping = c.maxParts, c.stopping
			r.start(t)
			status, body := r.push(t, c.items)
			if status != c.status || string(body) != c.body {
				t.Errorf("%d %s; want %d %s", status, body, c.status, c.body)
			}
			r.wroteNothing(t)
			requests, items := r.obs.counts()
			if requests["http"] != 1 || len(items) != 0 {
				t.Errorf("observed requests %v items %v", requests, items)
			}
		})
	}
}

// A one-item intake hears its item's result, not a rendered array.
func TestPushAnswersAnItemIntakeWithItsResult(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		stopping bool
		failing  bool
		status   int
		result   string
		err      string
	}{
		{"queued", false, false, jsonapi.StatusCreated, "queued", ""},
		{"buffered", false, true, jsonapi.StatusCreated, "buffered", ""},
		{"stopping", true, false, jsonapi.StatusServiceUnavailable, "", push.ErrStopping},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRig()
			r.stopping = c.stopping
			if c.failing {
				r.fu.failing = map[string]bool{"a": true}
			}
			r.start(t)
			type answer struct {
				status int
				r      jsonapi.Result
			}
			ch := make(chan answer, 1)
			r.p.Push(context.Background(), "jetstream", tenancy.TenantID{}, []jsonapi.Item{item("q", "a", "m1")},
				push.Answer{Item: func(s int, res jsonapi.Result) { ch <- answer{s, res} }})
			var a answer
			select {
			case a = <-ch:
			case <-time.After(30 * time.Second):
				t.Fatal("no answer within 30s")
			}
			if a.status != c.status || a.r.Status != c.result || a.r.Error != c.err {
				t.Errorf("%d %+v; want %d %s %q", a.status, a.r, c.status, c.result, c.err)
			}
			if requests, _ := r.obs.counts(); requests["jetstream"] != 1 {
				t.Errorf("requests %v", requests)
			}
		})
	}
}

// A request over more partitions than the submission window keeps at most
// the window's worth in fusion at once and still answers every item. The
// fake holds every submission until the test answers it, so the window
// fills, and a wider one would show.
func TestPushKeepsAWindowOfPartitionsInFusion(t *testing.T) {
	t.Parallel()
	const parts, window = 600, 256
	r := newRig()
	r.maxParts = parts
	r.fu.hold = make(chan fusion.Submission, parts)
	r.start(t)
	items := make([]jsonapi.Item, parts)
	for i := range items {
		items[i] = item("q", fmt.Sprintf("p%d", i), "")
	}
	type answer struct {
		status int
		body   []byte
	}
	ch := make(chan answer, 1)
	r.p.Push(context.Background(), "http", tenancy.TenantID{}, items, push.Answer{Body: func(s int, b []byte) { ch <- answer{s, b} }})
	// Submissions are answered a window's worth at a time (or the last
	// ones, once every partition is in), so the window fills before any
	// slot is given back.
	deadline := time.After(60 * time.Second)
	var a answer
	var held []fusion.Submission
	for done := false; !done; {
		select {
		case s := <-r.fu.hold:
			held = append(held, s)
		case a = <-ch:
			done = true
		case <-deadline:
			t.Fatalf("no answer within 60s; %d submissions held", len(held))
		}
		if len(held) == window || len(r.fu.submissions()) == parts {
			for _, s := range held {
				r.fu.answer(s)
			}
			held = held[:0]
		}
	}
	rs := results(t, a.body)
	if a.status != jsonapi.StatusCreated || len(rs) != parts {
		t.Fatalf("%d with %d results", a.status, len(rs))
	}
	for i, res := range rs {
		if res.Status != "queued" {
			t.Fatalf("item %d: %+v", i, res)
		}
	}
	r.fu.mu.Lock()
	most, n := r.fu.maxInFlight, len(r.fu.subs)
	r.fu.mu.Unlock()
	if most != window || n != parts {
		t.Errorf("%d submissions, at most %d in fusion at once; want %d, %d", n, most, parts, window)
	}
}
