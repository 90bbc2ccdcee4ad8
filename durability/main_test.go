package durability_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/durability"
	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/internal/peers"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
	"github.com/queenbridge/queenbridge/spool"
	"github.com/queenbridge/queenbridge/storage"
)

// Real PostgreSQL (a database per test) and real NATS (a subject prefix
// per test), started once for the binary by testenv.
func TestMain(m *testing.M) { testenv.Main(m) }

func openDB(t testing.TB, dsn string) *pgwire.DB { return testkit.OpenDB(t, dsn, 8) }

func newDB(t testing.TB) *pgwire.DB { return openDB(t, testenv.NewDatabase(t)) }

// startFusion starts a fusion writing to db. Its cleanup is registered
// before any keeper's, so a keeper stops (its drain finishing its chunk)
// while fusion still runs.
func startFusion(t testing.TB, db *pgwire.DB) *fusion.Fusion {
	t.Helper()
	f, err := fusion.New(fusion.Config{Sink: db})
	return testkit.Started(t, f, err)
}

func openSpool(t testing.TB, dir string) *spool.Spool {
	t.Helper()
	s, err := spool.Open(spool.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// link is a peers link on a connection of its own, under prefix.
func link(t testing.TB, prefix, origin string) peers.Link {
	t.Helper()
	nc, err := nats.Connect(testenv.NATSURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return peers.Link{NATS: nc, Prefix: prefix, Origin: origin}
}

func prefix() string { return "du" + uuid.NewString()[:8] }

func startKeeper(t testing.TB, cfg durability.Config) *durability.Keeper {
	t.Helper()
	k, err := durability.New(cfg)
	k = testkit.Started(t, k, err)
	// A round trip, as Bridge.Start makes after subscribing: the server
	// has the keeper's subscriptions before a test publishes, so a switch
	// made right after Start is heard.
	if nc := cfg.Peers.NATS; nc != nil {
		if err := nc.FlushTimeout(time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	return k
}

// frames makes a frame per transactionId, each with a fresh message id.
func frames(txids ...string) []segment.Frame {
	out := make([]segment.Frame, len(txids))
	for i, tx := range txids {
		out[i] = segment.Frame{ID: uuid.Must(uuid.NewV7()), TransactionID: tx, TraceID: "trace-" + tx, Payload: []byte(`{"tx":"` + tx + `"}`)}
	}
	return out
}

func failed(queue, partition string, fs []segment.Frame) []durability.Failed {
	out := make([]durability.Failed, len(fs))
	for i := range fs {
		out[i] = durability.Failed{Queue: queue, Partition: partition, Frame: &fs[i]}
	}
	return out
}

// stored reads back a partition's messages.
func stored(t testing.TB, db *pgwire.DB, tenant [16]byte, queue, partition string) []storage.Message {
	t.Helper()
	msgs, err := db.ReadMessages(context.Background(), tenant, queue, partition, 1, 1000, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// sameFrames reports whether msgs hold exactly fs, in order: ids,
// transactionIds, trace ids and payloads as first made.
func sameFrames(msgs []storage.Message, fs []segment.Frame) bool {
	if len(msgs) != len(fs) {
		return false
	}
	for i, m := range msgs {
		f := m.Frame
		if f.ID != fs[i].ID || f.TransactionID != fs[i].TransactionID || f.TraceID != fs[i].TraceID || string(f.Payload) != string(fs[i].Payload) {
			return false
		}
	}
	return true
}

func count(t testing.TB, db *pgwire.DB, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Pool().QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
