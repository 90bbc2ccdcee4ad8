package fusion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/rs/zerolog"
)

// A lone submission commits without any timer: the hold tick is an hour.
func TestFireOnIdle(t *testing.T) {
	sink := newMemSink(t)
	f := startFusion(t, sink, func(c *Config) { c.HoldTick = time.Hour })
	v := submit(t, f, "q", "p", "a", "b")
	if statuses(v) != "queued@1 queued@2" {
		t.Fatalf("verdicts %s", statuses(v))
	}
	if sink.callCount() != 1 {
		t.Fatalf("%d sink calls, want 1", sink.callCount())
	}
}

// Many submitters over few partitions, with slow and fast completions
// interleaved: the sink fails the test on any overlap; offsets per partition
// come out dense, each once.
func TestNeverTwoFlushesOfOnePartition(t *testing.T) {
	sink := newMemSink(t)
	sink.delay = func(call int) time.Duration {
		return time.Duration(rand.Intn(3)) * time.Millisecond * time.Duration(call%2)
	}
	f := startFusion(t, sink, func(c *Config) { c.Shards = 2; c.InFlightMax = 8; c.InFlightInitial = 8 })
	const submitters, perSubmitter, partitions = 16, 40, 5
	var mu sync.Mutex
	offsets := map[string]map[int64]bool{}
	var wg sync.WaitGroup
	for s := 0; s < submitters; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			for i := 0; i < perSubmitter; i++ {
				p := fmt.Sprintf("p%d", (s+i)%partitions)
				v := submit(t, f, "q", p, fmt.Sprintf("%d-%d-a", s, i), fmt.Sprintf("%d-%d-b", s, i))
				mu.Lock()
				if offsets[p] == nil {
					offsets[p] = map[int64]bool{}
				}
				for _, x := range v {
					if x.Status != Queued || offsets[p][x.Offset] {
						t.Errorf("%s: verdict %s (offset seen before: %v)", p, x.Status, offsets[p][x.Offset])
					}
					offsets[p][x.Offset] = true
				}
				mu.Unlock()
			}
		}(s)
	}
	wg.Wait()
	total := 0
	for p, offs := range offsets {
		for o := int64(1); o <= int64(len(offs)); o++ {
			if !offs[o] {
				t.Fatalf("%s: offset %d missing", p, o)
			}
		}
		total += len(offs)
		if sink.stored("q", p) != len(offs) {
			t.Fatalf("%s: %d stored, %d answered", p, sink.stored("q", p), len(offs))
		}
	}
	if total != submitters*perSubmitter*2 {
		t.Fatalf("%d frames answered, want %d", total, submitters*perSubmitter*2)
	}
}

func TestBundlesNeverExceedBundleMax(t *testing.T) {
	sink := newMemSink(t)
	sink.delay = func(int) time.Duration { return 2 * time.Millisecond }
	f := startFusion(t, sink, func(c *Config) {
		c.BundleMax = 5
		c.Shards = 1
		c.InFlightMax = 2
		c.InFlightMin = 1
		c.InFlightInitial = 1
	})
	var chans []<-chan []Verdict
	for i := 0; i < 100; i++ {
		chans = append(chans, submitAsync(t, f, "q", fmt.Sprintf("p%d", i), frames("x")))
	}
	for _, ch := range chans {
		wait(t, ch)
	}
	biggest := 0
	for _, n := range sink.bundleSizes() {
		if n > 5 {
			t.Fatalf("bundle of %d segments with BundleMax 5", n)
		}
		biggest = max(biggest, n)
	}
	if biggest != 5 {
		t.Fatalf("largest bundle %d: partitions did not accumulate up to BundleMax", biggest)
	}
}

// behindGatedBundle submits one frame to p0 and waits until its bundle is in
// the sink (whose gate holds it, with the only permit), then one frame to
// each of p1..p(n-1); it returns their verdict channels.
func behindGatedBundle(t *testing.T, f *Fusion, sink *memSink, n int) (first <-chan []Verdict, rest []<-chan []Verdict) {
	t.Helper()
	first = submitAsync(t, f, "q", "p0", frames("x"))
	testkit.WaitFor(t, "first bundle in the sink", 10*time.Second, func() bool { return sink.callCount() == 1 })
	for i := 1; i < n; i++ {
		rest = append(rest, submitAsync(t, f, "q", fmt.Sprintf("p%d", i), frames("x")))
	}
	return first, rest
}

// While the only permit is held by a slow bundle, ready partitions
// accumulate; the freed permit fires them as one large bundle.
func TestBundleGrowsWhileSinkIsSlow(t *testing.T) {
	sink := newMemSink(t)
	sink.gate = make(chan struct{})
	f := startFusion(t, sink, func(c *Config) { c.Shards = 1; c.InFlightMin = 1; c.InFlightMax = 1; c.InFlightInitial = 1 })
	first, rest := behindGatedBundle(t, f, sink, 50)
	testkit.WaitFor(t, "shard to take every submission", 10*time.Second, func() bool { return len(f.shards[0].in) == 0 })
	close(sink.gate)
	wait(t, first)
	for _, ch := range rest {
		wait(t, ch)
	}
	sizes := sink.bundleSizes()
	if len(sizes) != 2 || sizes[0] != 1 || sizes[1] != 49 {
		t.Fatalf("bundle sizes %v, want [1 49]", sizes)
	}
}

// With several shards, partitions that wait for a permit go to the outbox,
// and the bundle the freed permit fires takes them from every shard: one
// commit, not one per shard.
func TestBundlesSpanShards(t *testing.T) {
	sink := newMemSink(t)
	sink.gate = make(chan struct{})
	f := startFusion(t, sink, func(c *Config) { c.Shards = 8; c.InFlightMin = 1; c.InFlightMax = 1; c.InFlightInitial = 1 })
	first, rest := behindGatedBundle(t, f, sink, 50)
	shards := map[int]bool{}
	for i := 1; i < 50; i++ {
		shards[f.shardOf([16]byte{}, "q", fmt.Sprintf("p%d", i))] = true
	}
	if len(shards) < 4 {
		t.Fatalf("49 partitions fell into %d shards only", len(shards))
	}
	testkit.WaitFor(t, "every shard to leave its partitions in the outbox", 10*time.Second, func() bool { return f.outbox.len() == 49 })
	close(sink.gate)
	wait(t, first)
	for _, ch := range rest {
		if v := wait(t, ch); v[0].Status != Queued {
			t.Fatalf("verdict %s", statuses(v))
		}
	}
	if sizes := sink.bundleSizes(); len(sizes) != 2 || sizes[0] != 1 || sizes[1] != 49 {
		t.Fatalf("bundle sizes %v, want [1 49]: the 49 partitions of %d shards in one bundle", sizes, len(shards))
	}
}

// A frame that comes for a partition while the partition's bundle is in
// flight goes with the next bundle, beside what waited in the outbox: the
// permit returns only once the shards have reopened the committed
// partitions, so the bundle it fires does not leave them for the one after.
func TestInFlightPartitionJoinsTheNextBundle(t *testing.T) {
	sink := newMemSink(t)
	sink.gate = make(chan struct{})
	f := startFusion(t, sink, func(c *Config) { c.Shards = 8; c.InFlightMin = 1; c.InFlightMax = 1; c.InFlightInitial = 1 })
	first, rest := behindGatedBundle(t, f, sink, 20)
	again := submitAsync(t, f, "q", "p0", frames("y"))
	testkit.WaitFor(t, "p1..p19 in the outbox and p0's second frame taken", 10*time.Second, func() bool {
		for _, s := range f.shards {
			if len(s.in) > 0 {
				return false
			}
		}
		return f.outbox.len() == 19
	})
	close(sink.gate)
	for _, ch := range append(rest, first, again) {
		if v := wait(t, ch); v[0].Status != Queued {
			t.Fatalf("verdict %s", statuses(v))
		}
	}
	if sizes := sink.bundleSizes(); len(sizes) != 2 || sizes[0] != 1 || sizes[1] != 20 {
		t.Fatalf("bundle sizes %v, want [1 20]: p0's second frame with the 19 that waited", sizes)
	}
	if calls := sink.callsWith("q", "p0"); !slices.Equal(calls, []int{0, 1}) {
		t.Fatalf("p0 written by calls %v, want [0 1]", calls)
	}
}

// Stop with an expired context while segments wait in the outbox behind a
// bundle that never returns: every frame is still answered, and Stop returns.
func TestAbortAnswersTheOutbox(t *testing.T) {
	sink := newMemSink(t)
	sink.gate = make(chan struct{}) // the first call waits until its context ends
	f, err := New(Config{Sink: sink, Shards: 4, InFlightMin: 1, InFlightMax: 1, InFlightInitial: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	first, rest := behindGatedBundle(t, f, sink, 20)
	testkit.WaitFor(t, "the outbox to fill", 10*time.Second, func() bool { return f.outbox.len() == 19 })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := f.Stop(ctx); err == nil {
		t.Fatal("Stop with an expired context must report it")
	}
	for _, ch := range append(rest, first) {
		if v := wait(t, ch); v[0].Status != Error {
			t.Fatalf("verdict %s, want error", statuses(v))
		}
	}
}

// A held partition whose permit comes back without a wake-up (the kick is
// lost) is dispatched by the backstop tick.
func TestHeldPartitionDispatchesOnBackstopTick(t *testing.T) {
	sink := newMemSink(t)
	f := startFusion(t, sink, func(c *Config) {
		c.HoldTick = 5 * time.Millisecond
		c.InFlightMin = 1
		c.InFlightMax = 1
		c.InFlightInitial = 1
	})
	f.limit.mu.Lock()
	f.limit.inUse = 1 // every permit taken
	f.limit.mu.Unlock()
	ch := submitAsync(t, f, "q", "p", frames("a"))
	// At least one waiter: the shard that holds the partition, and maybe
	// others whose first backstop tick found its segment in the outbox
	// and waited for a permit too (a slow machine gets there before this
	// looks).
	testkit.WaitFor(t, "the shard to hold the partition", 10*time.Second, func() bool {
		f.limit.mu.Lock()
		defer f.limit.mu.Unlock()
		return len(f.limit.waiters) >= 1
	})
	f.limit.mu.Lock()
	f.limit.inUse = 0 // freed without kicking anyone
	f.limit.waiters, f.limit.waiterSeen = nil, map[chan struct{}]bool{}
	f.limit.mu.Unlock()
	if v := wait(t, ch); v[0].Status != Queued {
		t.Fatalf("verdict %s", statuses(v))
	}
}

func TestStopFlushesEverything(t *testing.T) {
	sink := newMemSink(t)
	sink.delay = func(int) time.Duration { return time.Millisecond }
	f, err := New(Config{Sink: sink, InFlightMin: 1, InFlightMax: 1, InFlightInitial: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var chans []<-chan []Verdict
	for i := 0; i < 300; i++ {
		chans = append(chans, submitAsync(t, f, "q", fmt.Sprintf("p%d", i%30), frames(fmt.Sprint(i))))
	}
	if err := f.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, ch := range chans {
		select {
		case v := <-ch:
			if v[0].Status != Queued {
				t.Fatalf("submission %d: %s", i, statuses(v))
			}
		default:
			t.Fatalf("submission %d has no verdict after Stop returned", i)
		}
	}
	err = f.Submit(context.Background(), Submission{Queue: "q", Partition: "p", Frames: frames("late"), Done: func([]Verdict) {}})
	if !errors.Is(err, ErrStopped) {
		t.Fatalf("Submit after Stop: %v", err)
	}
	if err := f.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

// When Stop's context ends, frames not yet written are answered (error), not
// dropped, and Stop still returns.
func TestStopWithExpiredContextAnswersEverything(t *testing.T) {
	sink := newMemSink(t)
	sink.gate = make(chan struct{}) // the first bundle never finishes by itself
	f, err := New(Config{Sink: sink, InFlightMin: 1, InFlightMax: 1, InFlightInitial: 1, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := submitAsync(t, f, "q", "p0", frames("a"))
	testkit.WaitFor(t, "first bundle in the sink", 10*time.Second, func() bool { return sink.callCount() == 1 })
	second := submitAsync(t, f, "q", "p1", frames("b"))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	go func() { <-ctx.Done(); time.Sleep(10 * time.Millisecond); close(sink.gate) }()
	if err := f.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop: %v", err)
	}
	for _, ch := range []<-chan []Verdict{first, second} {
		select {
		case v := <-ch:
			if v[0].Status != Error {
				t.Fatalf("verdict %s, want error", statuses(v))
			}
		default:
			t.Fatal("a submission has no verdict after Stop returned")
		}
	}
}

// The fusion summary line: commits, segments, segments_per_commit, items,
// partitions written, and the fields the bridge adds, written while there
// is traffic.
func TestSummaryLineWhileThereIsTraffic(t *testing.T) {
	var mu sync.Mutex
	var buf strings.Builder
	w := zerolog.SyncWriter(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}))
	f := startFusion(t, newMemSink(t), func(c *Config) { c.SummaryEvery = 20 * time.Millisecond; c.Logger = zerolog.New(w) })
	f.SetSummaryFields(func(e *zerolog.Event) { e.Int("owned_buckets", 7) })
	submit(t, f, "q", "p1", "a", "b")
	submit(t, f, "q", "p2", "c")
	testkit.WaitFor(t, "a summary line", 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(buf.String(), `"message":"bundle summary"`)
	})
	mu.Lock()
	line := strings.SplitN(buf.String(), "\n", 2)[0]
	mu.Unlock()
	var ev struct {
		Target            string `json:"target"`
		Commits, Segments uint64
		PerCommit         float64 `json:"segments_per_commit"`
		Items             uint64
		Partitions        int64
		Owned             int `json:"owned_buckets"`
	}
	if err := json.Unmarshal([]byte(line), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Target != "fusion" || ev.Commits < 1 || ev.Segments < 2 || ev.Items != 3 || ev.PerCommit <= 0 || ev.Partitions != 2 || ev.Owned != 7 {
		t.Fatalf("summary %s", line)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
