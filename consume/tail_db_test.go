package consume

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/cursors"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/readside"
	"github.com/queenbridge/queenbridge/segment"
	"github.com/queenbridge/queenbridge/storage"
)

// The hot tail against a real PostgreSQL: each tailBridge is the consumer
// side of one bridge (a Consumer with a tail of its own, fed as the
// fusion's commit hook feeds it); several share one database, as bridges
// do. Every test ends with a pop served from memory, so that what it shows
// of the misses is not a tail that never serves.

func openTailDB(t *testing.T) *pgwire.DB {
	t.Helper()
	return testkit.OpenDB(t, testenv.NewDatabase(t), 4)
}

// watchStore is the database, with every refused tail claim checked to
// have written nothing on its cursor row (no row version, no lock, no
// column changed).
type watchStore struct {
	*pgwire.DB
	t *testing.T

	mu sync.Mutex // guards refused, applied, claimCalls and held: the fuser runs claim statements in several goroutines
	// refused and applied count the tail claims PostgreSQL refused and
	// applied.
	refused, applied int
	// claimCalls lists each claim statement's partition ids; the first
	// held statements wait for hold to close (nil: none wait).
	claimCalls [][]int64
	hold       chan struct{}
	held       int
}

// claimed records a claim statement, and holds it when it is one of the
// first held.
func (s *watchStore) claimed(claims []pgwire.TailClaim) {
	s.mu.Lock()
	var ids []int64
	for _, c := range claims {
		ids = append(ids, c.PartitionID)
	}
	s.claimCalls = append(s.claimCalls, ids)
	hold := s.hold
	wait := hold != nil && len(s.claimCalls) <= s.held
	s.mu.Unlock()
	if wait {
		<-hold
	}
}

// count records one claim's verdict.
func (s *watchStore) count(applied bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if applied {
		s.applied++
	} else {
		s.refused++
	}
}

// counts returns how many claims PostgreSQL refused and applied so far.
func (s *watchStore) counts() (refused, applied int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused, s.applied
}

func (s *watchStore) claimStatements() [][]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.claimCalls)
}

func (s *watchStore) row(ctx context.Context, pid int64, group string) string {
	var out string
	err := s.Pool().QueryRow(ctx, `SELECT coalesce((SELECT concat_ws('|', xmin::text, xmax::text, cursor_offset,
		coalesce(lease_id::text, '-'), delivered_to, delivered_count, acked_count, coalesce(encode(delivered_hashes, 'hex'), '-'),
		updated_at::text) FROM queen.consumer_cursors WHERE partition_id = $1 AND consumer_group = $2), '')`, pid, group).Scan(&out)
	if err != nil {
		s.t.Errorf("cursor row: %v", err)
	}
	return out
}

func (s *watchStore) PopTail(ctx context.Context, claims []pgwire.TailClaim) ([]pgwire.PopResult, error) {
	before := make([]string, len(claims))
	for i, c := range claims {
		before[i] = s.row(ctx, c.PartitionID, c.Group)
	}
	s.claimed(claims)
	out, err := s.DB.PopTail(ctx, claims)
	if err != nil {
		return out, err
	}
	for i, r := range out {
		delivered := r.Status == pgwire.PopDelivered
		s.count(delivered)
		if delivered {
			continue
		}
		if after := s.row(ctx, claims[i].PartitionID, claims[i].Group); after != before[i] {
			s.t.Errorf("a refused tail claim (%+v) wrote the cursor row:\n before %s\n after  %s", claims[i], before[i], after)
		}
	}
	return out, nil
}

type tailBridge struct {
	t *testing.T
	// unwanted: push does not mark the queue as popped here.
	unwanted bool
	db       *pgwire.DB
	store    *watchStore
	reads    *readside.Reads
	tail     *cursors.Tail
	c        *Consumer
}

// newTailBridge starts one bridge's consumer side on db, with an empty
// tail: a bridge as it starts, or restarts.
func newTailBridge(t *testing.T, db *pgwire.DB) *tailBridge {
	t.Helper()
	reads, marks := startSides(t, db)
	b := &tailBridge{t: t, db: db, store: &watchStore{DB: db, t: t}, reads: reads, tail: cursors.NewTail(1 << 20)}
	var err error
	if b.c, err = New(Config{DB: b.store, Reads: reads, Marks: marks, Payloads: plainPayloads{}, Tail: b.tail}); err != nil {
		t.Fatal(err)
	}
	return b
}

// push writes one segment of txids as this bridge's fusion does: one
// bundle committed, handed to the commit hook, then announced. The queue is
// one this bridge's consumers pop (the tail keeps its commits: Tail.Want),
// unless b.unwanted.
func (b *tailBridge) push(queue, partition string, txids ...string) segment.Result {
	b.t.Helper()
	if !b.unwanted {
		b.tail.Want([16]byte{}, queue)
	}
	frames := make([]segment.Frame, len(txids))
	for i, tx := range txids {
		frames[i] = segment.Frame{ID: uuid.Must(uuid.NewV7()), TransactionID: tx, Payload: []byte(`{}`)}
	}
	w := []segment.Write{segmentOf(queue, partition, frames)}
	res, err := b.db.PushBundle(context.Background(), w)
	if err != nil || res[0].Status != segment.Queued {
		b.t.Fatalf("push %v: %+v %v", txids, res, err)
	}
	b.tail.Committed(w, res)
	b.reads.Announce([]readside.Key{{Queue: queue, Partition: partition}})
	return res[0]
}

// pop pops the partition ("": any one partition) for group g and answers
// the delivery's transactionIds; the offsets must be consecutive, after the
// cursor, up to the delivery's end (retention may have removed what
// followed the cursor).
// popBesideCommits is round i of a queue whose p1 and p2 keep getting
// commits: one more message on each, then an any-partition pop, which must
// deliver one partition.
func (b *tailBridge) popBesideCommits(queue string, i int) (Popped, []string) {
	b.t.Helper()
	b.push(queue, "p1", fmt.Sprint("p1-", i+2))
	b.push(queue, "p2", fmt.Sprint("p2-", i+2))
	p, got := b.pop(queue, "")
	if len(p.Parts) != 1 {
		b.t.Fatalf("pop %d delivered %d partitions, want 1", i, len(p.Parts))
	}
	return p, got
}

func (b *tailBridge) pop(queue, partition string) (Popped, []string) {
	b.t.Helper()
	p, err := b.c.Pop(context.Background(), [16]byte{}, PopRequest{Queue: queue, Partition: partition, Group: "g",
		Batch: 10, Partitions: 1, SubscriptionMode: "all"})
	if err != nil {
		b.t.Fatal(err)
	}
	var txs []string
	for _, part := range p.Parts {
		for i, m := range part.Messages {
			if m.Offset != part.To-int64(len(part.Messages)-1-i) || m.Offset <= part.Cursor {
				b.t.Fatalf("delivery after %d to %d: message %d at offset %d", part.Cursor, part.To, i, m.Offset)
			}
			txs = append(txs, m.Frame.TransactionID)
		}
	}
	return p, txs
}

// ack acknowledges a whole delivery, as Queen's clients do.
func (b *tailBridge) ack(p Popped) {
	b.t.Helper()
	var acks []Ack
	for _, part := range p.Parts {
		for _, m := range part.Messages {
			acks = append(acks, Ack{TransactionID: m.Frame.TransactionID, PartitionID: part.PartitionID, Group: "g", Lease: &p.Lease, Status: Completed})
		}
	}
	out := b.c.Ack(context.Background(), [16]byte{}, acks)
	for i, o := range out {
		if o.Err != "" || (i == len(out)-1 && !o.LeaseReleased) {
			b.t.Fatalf("ack %d of %d: %+v", i, len(out), o)
		}
	}
}

// wantPop pops, wants exactly want delivered, and the tail's counters to
// have moved by hits and misses; it acknowledges the delivery.
func (b *tailBridge) wantPop(queue, partition string, hits, misses uint64, want ...string) {
	b.t.Helper()
	before := b.c.Stats().Tail
	p, got := b.pop(queue, partition)
	after := b.c.Stats().Tail
	if !slices.Equal(got, want) {
		b.t.Fatalf("delivered %v, want %v", got, want)
	}
	if after.Hits-before.Hits != hits || after.Misses-before.Misses != misses {
		b.t.Fatalf("the pop of %v counted %d hits and %d misses, want %d and %d", want, after.Hits-before.Hits, after.Misses-before.Misses, hits, misses)
	}
	if len(want) > 0 {
		b.ack(p)
	}
}

// Retention removed the first segments the tail would deliver: the claim
// is refused and writes nothing, and the pop reads PostgreSQL and delivers
// what is left (the cursor skips ahead, as without the tail).
func TestTailClaimAfterRetentionReadsPostgreSQL(t *testing.T) {
	t.Parallel()
	db := openTailDB(t)
	ctx := context.Background()
	minute, none := int32(60), int32(0)
	if _, err := db.ConfigureQueue(ctx, [16]byte{}, "r", storage.QueueUpdate{RetentionSeconds: &minute, DedupWindowSeconds: &none}); err != nil {
		t.Fatal(err)
	}
	a := newTailBridge(t, db)
	pid := a.push("r", "p", "m1", "m2").PartitionID
	a.wantPop("r", "p", 0, 0, "m1", "m2") // the group's first pop seeds its cursor row
	a.push("r", "p", "m3", "m4")
	a.push("r", "p", "m5")
	a.push("r", "p", "m6", "m7")
	if _, err := db.Pool().Exec(ctx, `UPDATE queen.log_segments SET created_at = created_at - interval '2 minutes'
		WHERE partition_id = $1 AND end_offset <= 4`, pid); err != nil {
		t.Fatal(err)
	}
	if res, err := db.RetentionStep(ctx, 16, 1000); err != nil || res.Segments != 2 {
		t.Fatalf("retention: %+v %v", res, err)
	}
	a.wantPop("r", "p", 0, 1, "m5", "m6", "m7")
	if refused, _ := a.store.counts(); refused != 1 {
		t.Fatalf("%d refused claims, want 1", refused)
	}
	a.push("r", "p", "m8")
	a.wantPop("r", "p", 1, 0, "m8")
	// The same, with every segment the tail holds after the cursor removed.
	a.push("r", "p", "m9")
	if _, err := db.Pool().Exec(ctx, `UPDATE queen.log_segments SET created_at = created_at - interval '2 minutes'
		WHERE partition_id = $1`, pid); err != nil {
		t.Fatal(err)
	}
	if res, err := db.RetentionStep(ctx, 16, 1000); err != nil || res.Segments == 0 {
		t.Fatalf("retention: %+v %v", res, err)
	}
	a.wantPop("r", "p", 0, 1)
	a.push("r", "p", "m10")
	a.wantPop("r", "p", 0, 1, "m10") // the tail still holds m9 before it: refused again
	a.push("r", "p", "m11")
	a.wantPop("r", "p", 1, 0, "m11")
}

// A bridge that restarts has an empty tail: its pops read PostgreSQL and
// deliver what its earlier life wrote and nobody consumed, in order; once
// it has seen the group's cursor, its new commits are served from memory.
func TestTailAfterRestartStartsEmpty(t *testing.T) {
	t.Parallel()
	db := openTailDB(t)
	a := newTailBridge(t, db)
	a.push("q", "p", "m1", "m2")
	a.wantPop("q", "p", 0, 0, "m1", "m2")
	a.push("q", "p", "m3")
	a.wantPop("q", "p", 1, 0, "m3")
	a.push("q", "p", "m4", "m5")
	a.push("q", "p", "m6")

	a = newTailBridge(t, db) // restarted
	a.wantPop("q", "p", 0, 0, "m4", "m5", "m6")
	// The cursor that acknowledgement left is not kept: the tail held
	// nothing of the partition then. The next pop reads PostgreSQL and
	// learns it.
	a.push("q", "p", "m7")
	a.wantPop("q", "p", 0, 0, "m7")
	a.push("q", "p", "m8")
	a.wantPop("q", "p", 1, 0, "m8")
}

// Another bridge's acknowledgement moved the cursor after this bridge saw
// it: the claim from memory is refused and writes nothing, and the pop
// reads PostgreSQL; nothing is delivered twice.
func TestTailStaleCursorReadsPostgreSQL(t *testing.T) {
	t.Parallel()
	db := openTailDB(t)
	a, b := newTailBridge(t, db), newTailBridge(t, db)
	a.push("q", "p", "m1", "m2", "m3")
	a.wantPop("q", "p", 0, 0, "m1", "m2", "m3") // a sees the cursor at 3
	a.push("q", "p", "m4", "m5", "m6")
	b.wantPop("q", "p", 0, 0, "m4", "m5", "m6") // through b: the cursor is at 6
	a.push("q", "p", "m7", "m8")
	a.wantPop("q", "p", 0, 1, "m7", "m8")
	if refused, applied := a.store.counts(); refused != 1 || applied != 0 {
		t.Fatalf("a's claims: %d refused, %d applied; want 1 and 0", refused, applied)
	}
	a.push("q", "p", "m9")
	a.wantPop("q", "p", 1, 0, "m9")

	// Stale under a lease: b holds m10 when a, which saw the cursor at 9,
	// pops. The cursor is still 9; the live lease refuses the claim.
	a.push("q", "p", "m10")
	held, got := b.pop("q", "p")
	if !slices.Equal(got, []string{"m10"}) {
		t.Fatalf("b's pop: %v", got)
	}
	a.wantPop("q", "p", 0, 1)
	b.ack(held)
	a.push("q", "p", "m11")
	a.wantPop("q", "p", 0, 0, "m11") // a forgot the cursor it had; the pop learns it
	a.push("q", "p", "m12")
	a.wantPop("q", "p", 1, 0, "m12")
}

// Another bridge wrote between two of this bridge's commits: the tail
// starts a new run, and a cursor before the other writer's segment is not
// served from memory (it would skip that segment); the pop reads
// PostgreSQL and delivers every message in offset order.
func TestTailNeverServesAcrossAnotherWritersSegment(t *testing.T) {
	t.Parallel()
	db := openTailDB(t)
	a, b := newTailBridge(t, db), newTailBridge(t, db)
	a.push("q", "p", "m1", "m2")
	a.wantPop("q", "p", 0, 0, "m1", "m2")
	b.push("q", "p", "m3", "m4")
	a.push("q", "p", "m5", "m6")
	a.wantPop("q", "p", 0, 0, "m3", "m4", "m5", "m6")
	a.push("q", "p", "m7")
	a.wantPop("q", "p", 1, 0, "m7")
	// b's tail holds 3..4, then its next commit is a new run.
	b.push("q", "p", "m8")
	b.wantPop("q", "p", 0, 0, "m8")
	b.push("q", "p", "m9")
	a.push("q", "p", "m10")
	b.wantPop("q", "p", 1, 0, "m9")  // b's run ends at 9
	a.wantPop("q", "p", 0, 0, "m10") // a saw the cursor at 7: before its run
	a.push("q", "p", "m11")
	a.wantPop("q", "p", 1, 0, "m11")
}

// The group was sought back on one partition, so that its cursor is below
// what the tail holds, while the queue's other partitions keep getting
// commits the tail can serve. Any-partition pops of one partition serve it
// from PostgreSQL first (it is the furthest behind) instead of passing over
// it for as long as the others are fed; then the others from memory.
func TestTailRoundServesAPartitionBehindFirst(t *testing.T) {
	t.Parallel()
	db := openTailDB(t)
	a := newTailBridge(t, db)
	parts := []string{"p0", "p1", "p2"}
	for _, p := range parts {
		a.push("s", p, p+"-1")
		a.wantPop("s", p, 0, 0, p+"-1") // the group's first pop seeds its cursor row
	}
	a.push("s", "p0", "p0-2")
	a.wantPop("s", "p0", 1, 0, "p0-2") // the tail holds p0 from offset 1
	if _, err := a.c.SeekGroup(context.Background(), pgwire.SeekRequest{Group: "g", Queue: "s", Partition: "p0", At: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	before := a.c.Stats().Tail
	behind := -1
	for i := range parts {
		p, got := a.popBesideCommits("s", i)
		if p.Parts[0].Partition == "p0" {
			if behind >= 0 || !slices.Equal(got, []string{"p0-1", "p0-2"}) {
				t.Fatalf("pop %d delivered %v of p0 (earlier at pop %d; -1: none), want p0-1 and p0-2 once", i, got, behind)
			}
			behind = i
		}
		a.ack(p)
	}
	if behind != 0 {
		t.Fatalf("the partition sought back was delivered at pop %d of %d (-1: none), want the first", behind, len(parts))
	}
	after := a.c.Stats().Tail
	if refused, _ := a.store.counts(); after.Hits-before.Hits != uint64(len(parts)-1) || after.Misses != before.Misses || refused != 0 {
		t.Fatalf("the pops after p0's counted %d hits and %d misses (%d claims refused), want %d and none",
			after.Hits-before.Hits, after.Misses-before.Misses, refused, len(parts)-1)
	}
}

// Another bridge wrote to a partition whose group cursor this bridge's tail
// has at the end of its run, so the tail counts nothing pending there, while
// the queue's other partitions keep getting commits the tail can serve.
// Any-partition pops of one partition still reach it (the tail's "empty" is
// not trusted on every ordering) and deliver what the other bridge wrote,
// within a bounded number of pops, instead of passing over it for as long
// as the others are fed.
func TestTailRoundReachesAPartitionAnotherBridgeWrote(t *testing.T) {
	t.Parallel()
	db := openTailDB(t)
	a, b := newTailBridge(t, db), newTailBridge(t, db)
	parts := []string{"p0", "p1", "p2"}
	for _, p := range parts {
		a.push("w", p, p+"-1")
		a.wantPop("w", p, 0, 0, p+"-1") // seeds the cursor row
	}
	a.push("w", "p0", "p0-2")
	a.wantPop("w", "p0", 1, 0, "p0-2") // a's tail: p0's cursor at the end of its run
	if n, known := a.tail.Pending(mustPartitionID(t, a, "w", "p0"), "g"); !known || n != 0 {
		t.Fatalf("a's tail on p0: %d pending (known %v), want 0 known", n, known)
	}
	b.push("w", "p0", "from-b")
	// A peer's available announcement, as the broadcast delivers it.
	a.reads.Announce([]readside.Key{{Queue: "w", Partition: "p0"}})
	const bound = 3 * emptyRecheck
	reached := -1
	for i := 0; i < bound && reached < 0; i++ {
		p, got := a.popBesideCommits("w", i)
		if p.Parts[0].Partition == "p0" {
			if !slices.Equal(got, []string{"from-b"}) {
				t.Fatalf("pop %d delivered %v of p0, want what the other bridge wrote", i, got)
			}
			reached = i
		}
		a.ack(p)
	}
	if reached < 0 {
		t.Fatalf("in %d pops the partition the other bridge wrote was never delivered", bound)
	}
}

func mustPartitionID(t *testing.T, b *tailBridge, queue, partition string) int64 {
	t.Helper()
	id, ok := b.tail.PartitionID([16]byte{}, queue, partition)
	if !ok {
		t.Fatalf("the tail knows no id for %s/%s", queue, partition)
	}
	return id
}

// Pops served from the hot tail while every claim statement slot is taken
// queue, and their claims go together in the next statement, each pop
// getting its own delivery.
func TestTailClaimsOfConcurrentPopsShareAStatement(t *testing.T) {
	t.Parallel()
	db := openTailDB(t)
	a := newTailBridge(t, db)
	parts := []string{"p1", "p2", "p3", "p4"}
	ids := map[string]int64{}
	for _, p := range parts {
		ids[p] = a.push("f", p, p+"-1").PartitionID
		a.wantPop("f", p, 0, 0, p+"-1") // the group's first pop seeds its cursor row
		a.push("f", p, p+"-2")
	}
	hold := make(chan struct{})
	a.store.mu.Lock()
	a.store.claimCalls, a.store.hold, a.store.held = nil, hold, maxClaimStatements
	a.store.mu.Unlock()

	type popped struct {
		part string
		got  []string
	}
	done := make(chan popped, len(parts))
	start := func(p string) {
		go func() {
			_, got := a.pop("f", p)
			done <- popped{p, got}
		}()
	}
	queued := func() int {
		a.c.tailClaims.mu.Lock()
		defer a.c.tailClaims.mu.Unlock()
		return len(a.c.tailClaims.queue)
	}
	for k, p := range parts {
		start(p)
		if k < maxClaimStatements {
			testkit.WaitFor(t, p+"'s claim statement to start", time.Minute, func() bool { return len(a.store.claimStatements()) == k+1 })
		} else {
			testkit.WaitFor(t, p+"'s claim to queue", time.Minute, func() bool { return queued() == k+1-maxClaimStatements })
		}
	}
	close(hold)
	for range parts {
		d := <-done
		if !slices.Equal(d.got, []string{d.part + "-2"}) {
			t.Errorf("the pop of %s delivered %v", d.part, d.got)
		}
	}
	want := [][]int64{{ids["p1"]}, {ids["p2"]}, {ids["p3"], ids["p4"]}}
	if got := a.store.claimStatements(); !slices.EqualFunc(got, want, slices.Equal[[]int64]) {
		t.Errorf("claim statements %v, want %v", got, want)
	}
	if s := a.c.Stats().Tail; s.Hits != 4 {
		t.Errorf("tail %+v: want the 4 pops served from it", s)
	}
}

// The tail keeps the commits of a queue once a pop of it came through this
// bridge: before that pushes cost it nothing, and the pops read
// PostgreSQL; after it, a consumer keeping up is served from memory.
func TestTailKeepsAQueueOncePoppedHere(t *testing.T) {
	t.Parallel()
	db := openTailDB(t)
	a := newTailBridge(t, db)
	a.unwanted = true
	a.push("w", "p", "m1", "m2")
	if st := a.tail.Stats(); st.Segments != 0 {
		t.Fatalf("the tail holds a queue never popped here: %+v", st)
	}
	a.wantPop("w", "p", 0, 0, "m1", "m2") // the group's first pop, through PostgreSQL
	a.push("w", "p", "m3")
	if st := a.tail.Stats(); st.Segments != 1 {
		t.Fatalf("after a pop of the queue the tail holds %d segments, want 1", st.Segments)
	}
	// The cursor the first pop's acknowledgement left is not kept (the
	// tail held nothing of the partition then): the next pop reads
	// PostgreSQL and learns it, and the one after is served from memory.
	a.wantPop("w", "p", 0, 0, "m3")
	a.push("w", "p", "m4")
	a.wantPop("w", "p", 1, 0, "m4")
}
