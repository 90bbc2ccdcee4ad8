package pgwire_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
)

func transaction(db *pgwire.DB, writes []segment.Write, acks ...pgwire.TxnAckGroup) (pgwire.TxnResult, error) {
	return db.Transaction(context.Background(), pgwire.TxnRequest{Writes: writes, Acks: acks})
}

// popAll pops partition p of queue q for group g under a fresh lease and
// returns the pop and its lease.
func popAll(t *testing.T, db *pgwire.DB, q, p, g string) (pgwire.PopResult, [16]byte) {
	t.Helper()
	l := lease()
	return pop(t, db, pgwire.PopRequest{Queue: q, Partition: p, Group: g, Lease: l}), l
}

// A transaction pushes to one queue and acknowledges popped messages of
// another in one PostgreSQL transaction: both happen, a pushed
// partition's items get consecutive offsets at one timestamp, a dlq ack
// writes its dead letter, and the lease ends with its last ack.
func TestTransactionCommitsPushesAndAcks(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	src := push(t, db, write("a", "p", "a1", "a2"))
	push(t, db, write("b", "p", "old"))
	got, l := popAll(t, db, "a", "p", "g")
	if len(got.Messages) != 2 {
		t.Fatalf("popped %d", len(got.Messages))
	}
	b, c := write("b", "p", "b1", "b2", "b3"), write("c", "x", "c1")
	b.Verified, c.Verified = 0, pgwire.NoProbe
	res, err := transaction(db, []segment.Write{b, c}, pgwire.TxnAckGroup{PartitionID: src[0].PartitionID, Group: "g", Lease: &l,
		Items: []pgwire.AckItem{{TransactionID: "a1"}, {TransactionID: "a2", Status: "dlq", Error: "bad"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pushed) != 2 || res.Pushed[0].BaseOffset != 2 || res.Pushed[1].BaseOffset != 1 || res.Pushed[0].CreatedAt != res.Pushed[1].CreatedAt {
		t.Fatalf("pushed %+v", res.Pushed)
	}
	if len(res.Acked) != 1 || !res.Acked[0].Released || res.Acked[0].Cursor != 2 || res.Acked[0].DLQ[0] || !res.Acked[0].DLQ[1] || res.Acked[0].Queue != "a" {
		t.Fatalf("acked %+v", res.Acked)
	}
	if n := count(t, db.Pool(), `SELECT last_offset FROM queen.log_partitions WHERE id = $1`, res.Pushed[0].PartitionID); n != 4 {
		t.Fatalf("b/p ends at %d", n)
	}
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.dead_letters`); n != 1 {
		t.Fatalf("%d dead letters", n)
	}
}

// An abort writes nothing: a stored transactionId (inside the window), an
// acknowledgement of a message the group was not delivered, a lease that is
// not the live one. No offset moves (no gap), no queue or partition made
// by the transaction stays, no cursor moves.
func TestTransactionAbortsWriteNothing(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	src := push(t, db, write("a", "p", "a1", "a2"))
	push(t, db, write("b", "p", "b1"))
	got, l := popAll(t, db, "a", "p", "g")
	if len(got.Messages) != 2 {
		t.Fatalf("popped %d", len(got.Messages))
	}
	other := lease()
	fresh := write("new-queue", "p", "n1")
	fresh.Verified = pgwire.NoProbe
	good := pgwire.TxnAckGroup{PartitionID: src[0].PartitionID, Group: "g", Items: []pgwire.AckItem{{TransactionID: "a1"}}}
	for _, c := range []struct {
		name   string
		writes []segment.Write
		acks   []pgwire.TxnAckGroup
		check  func(error) bool
	}{
		{"stored transactionId", []segment.Write{fresh, write("b", "p", "b2", "b1")}, []pgwire.TxnAckGroup{good}, func(err error) bool {
			var d *pgwire.TxnDuplicateError
			return errors.As(err, &d) && d.Write == 1 && d.Frame == 1 && d.Offset == 1
		}},
		{"unknown ack", []segment.Write{fresh}, []pgwire.TxnAckGroup{good, {PartitionID: src[0].PartitionID, Group: "h", Items: []pgwire.AckItem{{TransactionID: "a2"}}}}, func(err error) bool {
			var a *pgwire.TxnAckError
			return errors.As(err, &a) && a.Group == 1 && a.Item == 0 && !a.Lease && a.Reason != ""
		}},
		{"not delivered", []segment.Write{fresh}, []pgwire.TxnAckGroup{{PartitionID: src[0].PartitionID, Group: "g", Items: []pgwire.AckItem{{TransactionID: "a1"}, {TransactionID: "zz"}}}}, func(err error) bool {
			var a *pgwire.TxnAckError
			return errors.As(err, &a) && a.Group == 0 && a.Item == 1 && !a.Lease
		}},
		{"lease not held", nil, []pgwire.TxnAckGroup{{PartitionID: src[0].PartitionID, Group: "g", Lease: &other, Items: []pgwire.AckItem{{TransactionID: "a1"}}}}, func(err error) bool {
			var a *pgwire.TxnAckError
			return errors.As(err, &a) && a.Lease
		}},
	} {
		_, err := transaction(db, c.writes, c.acks...)
		if !c.check(err) {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.queues WHERE name = 'new-queue'`); n != 0 {
		t.Fatalf("an aborted transaction left its queue")
	}
	if n := count(t, db.Pool(), `SELECT sum(last_offset) FROM queen.log_partitions`); n != 3 {
		t.Fatalf("offsets moved: %d", n)
	}
	if n := count(t, db.Pool(), `SELECT cursor_offset FROM queen.consumer_cursors WHERE partition_id = $1 AND consumer_group = 'g'`, src[0].PartitionID); n != 0 {
		t.Fatalf("cursor moved to %d", n)
	}
	// The live lease still acknowledges; the next push to b takes offset 2.
	if _, err := transaction(db, []segment.Write{write("b", "p", "b2")}, pgwire.TxnAckGroup{PartitionID: src[0].PartitionID, Group: "g", Lease: &l,
		Items: []pgwire.AckItem{{TransactionID: "a1"}, {TransactionID: "a2"}}}); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db.Pool(), `SELECT p.last_offset FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'b'`); n != 2 {
		t.Fatalf("b ends at %d", n)
	}
	// Acknowledged already: a replay fails on it and pushes nothing.
	_, err := transaction(db, []segment.Write{fresh}, pgwire.TxnAckGroup{PartitionID: src[0].PartitionID, Group: "g", Items: []pgwire.AckItem{{TransactionID: "a1"}}})
	var a *pgwire.TxnAckError
	if !errors.As(err, &a) {
		t.Fatalf("replayed ack: %v", err)
	}
}

// A transaction with no connection to be had is not attempted.
func TestTransactionUnavailable(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := db.Transaction(ctx, pgwire.TxnRequest{Writes: []segment.Write{write("a", "p", "x")}})
	if err == nil || pgwire.IsOutcomeUnknown(err) {
		t.Fatalf("cancelled before sending: %v", err)
	}
}

// proxy forwards TCP connections to PostgreSQL until cut closes them all:
// a connection lost in the middle of a statement.
type proxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newProxy(t *testing.T, dsn string) (*proxy, string) {
	t.Helper()
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	network, addr := "tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	if strings.HasPrefix(cfg.Host, "/") {
		network, addr = "unix", fmt.Sprintf("%s/.s.PGSQL.%d", cfg.Host, cfg.Port)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() { // ends when the listener closes
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial(network, addr)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			go func() { _, _ = io.Copy(c, s); c.Close() }()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Host = fmt.Sprintf("127.0.0.1:%d", port)
		q := u.Query()
		q.Del("host")
		q.Del("port")
		u.RawQuery = q.Encode()
		return p, u.String()
	}
	return p, fmt.Sprintf("%s host=127.0.0.1 port=%d", dsn, port)
}

// cut closes every connection through the proxy.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// A connection lost after the transaction was sent leaves its outcome
// unknown, and says so (never success, never "rolled back").
func TestTransactionOutcomeUnknown(t *testing.T) {
	t.Parallel()
	dsn := testenv.NewDatabase(t)
	direct := openDSN(t, dsn)
	push(t, direct, write("a", "p", "a1"))
	px, via := newProxy(t, dsn)
	db := openDSN(t, via)
	// Hold the partition row, so that the transaction waits on it.
	tx, err := direct.Pool().Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(context.Background(), `SELECT 1 FROM queen.log_partitions WHERE name = 'p' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := db.Transaction(context.Background(), pgwire.TxnRequest{Writes: []segment.Write{write("a", "p", "a2")}})
		done <- err
	}()
	testkit.WaitFor(t, "the transaction to wait for the row", 30*time.Second, func() bool {
		return count(t, direct.Pool(), `SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%txn_apply_v1%' AND wait_event_type = 'Lock'`) == 1
	})
	px.cut()
	if err := <-done; !pgwire.IsOutcomeUnknown(err) {
		t.Fatalf("a connection lost after sending: %v", err)
	}
}
