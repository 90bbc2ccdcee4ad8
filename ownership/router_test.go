package ownership

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/embedded"
	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/segment"
)

// offsetSink commits every segment at the next offsets of its partition.
type offsetSink struct {
	mu   sync.Mutex // guards last: flush goroutines call PushBundle
	last map[string]int64
}

func (s *offsetSink) PushBundle(_ context.Context, ws []segment.Write) ([]segment.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]segment.Result, len(ws))
	for i, w := range ws {
		s.last[w.Partition] += int64(w.Count)
		out[i] = segment.Result{PartitionID: 1, Status: segment.Queued, BaseOffset: s.last[w.Partition] - int64(w.Count) + 1, CreatedAt: time.Now()}
	}
	return out, nil
}

func (s *offsetSink) SegmentAt(context.Context, int64, int64) (segment.Stored, error) {
	return segment.Stored{}, errors.New("not kept")
}

type testRouter struct {
	*Router
	refuse atomic.Bool
}

func startRouter(t *testing.T, url string) *testRouter { return startRouterGathering(t, url, 0) }

func startRouterGathering(t *testing.T, url string, gather time.Duration) *testRouter {
	t.Helper()
	f, err := fusion.New(fusion.Config{Sink: &offsetSink{last: map[string]int64{}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	tr := &testRouter{}
	r, err := New(Config{NATS: nc, ID: uuid.NewString(), Fusion: f, Heartbeat: time.Minute,
		ForwardTimeout: 2 * time.Second, Gather: gather, Refuse: tr.refuse.Load})
	if err != nil {
		t.Fatal(err)
	}
	tr.Router = r
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = r.Stop(context.Background())
		_ = f.Stop(context.Background())
		nc.Close()
	})
	return tr
}

// Two routers find each other (hello, answered at once: the heartbeat is a
// minute, so nothing else could tell them), forward and answer; a refusing owner (in
// maintenance), an unknown owner and a stopped one send the groups back to
// their sender; a clean stop is heard at once.
func TestRoutersForwardAndFallBack(t *testing.T) {
	ns, err := embedded.StartNATS(embedded.NATSConfig{Listen: "-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Stop()
	a, b := startRouter(t, ns.ClientURL()), startRouter(t, ns.ClientURL())
	testkit.WaitFor(t, "the two to see each other", 20*time.Second, func() bool { return len(a.Members()) == 2 && len(b.Members()) == 2 })
	if a.Stats().OwnedBuckets+b.Stats().OwnedBuckets != 1024 {
		t.Fatalf("owned %d + %d", a.Stats().OwnedBuckets, b.Stats().OwnedBuckets)
	}
	groups := []Group{{Queue: "q", Partition: "p", Frames: []segment.Frame{{ID: [16]byte{1}, TransactionID: "t1"}, {ID: [16]byte{2}, TransactionID: "t2"}}}}
	answers, err := a.Forward(context.Background(), b.cfg.ID, [16]byte{}, groups)
	if err != nil {
		t.Fatal(err)
	}
	if v := answers[0].Verdicts; answers[0].Refused || len(v) != 2 || v[0].Status != fusion.Queued || v[0].Offset != 1 || v[1].Offset != 2 || v[1].MessageID != ([16]byte{2}) {
		t.Fatalf("answer %+v", answers[0])
	}
	if st := b.Stats(); st.GroupsReceived != 1 {
		t.Fatalf("owner stats %+v", st)
	}

	b.refuse.Store(true)
	if answers, err := a.Forward(context.Background(), b.cfg.ID, [16]byte{}, groups); err != nil || !answers[0].Refused {
		t.Fatalf("a refusing owner answered %+v %v", answers, err)
	}
	b.refuse.Store(false)
	if _, err := a.Forward(context.Background(), uuid.NewString(), [16]byte{}, groups); err == nil {
		t.Fatal("a forward to nobody succeeded")
	}
	if fb := a.Stats().GroupsFallback; fb != 2 {
		t.Fatalf("fallbacks %d, want the refused group and the unanswered one", fb)
	}

	if err := b.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the leave to be heard", 20*time.Second, func() bool { return len(a.Members()) == 1 }) // expiry would take three minutes
	if a.Stats().OwnedBuckets != 1024 || a.Stats().BucketMoves == 0 {
		t.Fatalf("after the leave %+v", a.Stats())
	}
	if _, err := a.Forward(context.Background(), b.cfg.ID, [16]byte{}, groups); err == nil {
		t.Fatal("a forward to a stopped bridge succeeded")
	}
}

// Concurrent requests' groups for one owner share forward messages, and
// every verdict comes back to the request whose frame it is.
func TestConcurrentForwardsShareMessages(t *testing.T) {
	ns, err := embedded.StartNATS(embedded.NATSConfig{Listen: "-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Stop()
	a := startRouterGathering(t, ns.ClientURL(), 20*time.Millisecond)
	b := startRouter(t, ns.ClientURL())
	testkit.WaitFor(t, "the two to see each other", 20*time.Second, func() bool { return len(a.Members()) == 2 && len(b.Members()) == 2 })
	const requests = 64
	type got struct {
		answers []Answer
		err     error
	}
	out := make([]chan got, requests)
	for i := range out {
		out[i] = make(chan got, 1)
		// Each request: two partitions of its own, its frames' ids name it.
		groups := []Group{
			{Queue: "q", Partition: fmt.Sprintf("a%d", i), Frames: []segment.Frame{{ID: [16]byte{byte(i), 1}, TransactionID: "x"}}},
			{Queue: "q", Partition: fmt.Sprintf("b%d", i), Frames: []segment.Frame{{ID: [16]byte{byte(i), 2}, TransactionID: "y"}, {ID: [16]byte{byte(i), 3}, TransactionID: "z"}}},
		}
		a.ForwardAsync(b.cfg.ID, [16]byte{}, groups, func(as []Answer, err error) { out[i] <- got{as, err} })
	}
	for i, ch := range out {
		g := <-ch
		if g.err != nil || len(g.answers) != 2 {
			t.Fatalf("request %d: %v %+v", i, g.err, g.answers)
		}
		for k, want := range [][][16]byte{{{byte(i), 1}}, {{byte(i), 2}, {byte(i), 3}}} {
			vs := g.answers[k].Verdicts
			if g.answers[k].Refused || len(vs) != len(want) {
				t.Fatalf("request %d group %d: %+v", i, k, g.answers[k])
			}
			for j, v := range vs {
				if v.Status != fusion.Queued || v.MessageID != want[j] || v.Offset != int64(j+1) {
					t.Fatalf("request %d group %d frame %d: %+v, want id %x at %d", i, k, j, v, want[j], j+1)
				}
			}
		}
	}
	st := a.Stats()
	t.Logf("%d groups in %d forward messages", st.GroupsForwarded, st.ForwardRequests)
	if st.GroupsForwarded != 2*requests || st.ForwardRequests >= requests || st.GroupsFallback != 0 {
		t.Fatalf("stats %+v: want %d groups in fewer than %d messages", st, 2*requests, requests)
	}
	if rs := b.Stats(); rs.GroupsReceived != 2*requests {
		t.Fatalf("the owner received %d groups", rs.GroupsReceived)
	}
}
