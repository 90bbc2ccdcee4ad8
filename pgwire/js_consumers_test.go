package pgwire_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/pgwire"
)

// jsConsumer is a consumer definition of the default tenant for tests.
func jsConsumer(queue, name, policy, config string) pgwire.JSConsumer {
	return pgwire.JSConsumer{Queue: queue, Name: name, Durable: true, Config: []byte(config), Start: pgwire.JSStart{Policy: policy}}
}

func putConsumer(t testing.TB, db *pgwire.DB, c pgwire.JSConsumer, action string) pgwire.JSConsumer {
	t.Helper()
	got, err := db.PutConsumer(context.Background(), c, action)
	if err != nil {
		t.Fatalf("PutConsumer %q (%s): %v", c.Name, c.Start.Policy, err)
	}
	return got
}

func consumerPartitions(t testing.TB, db *pgwire.DB, id int64) []pgwire.JSPartition {
	t.Helper()
	ps, err := db.ConsumerPartitions(context.Background(), id)
	if err != nil {
		t.Fatalf("ConsumerPartitions(%d): %v", id, err)
	}
	return ps
}

// floors are the consumer's floors by partition name, and whether each
// has its cursor row.
func floors(t testing.TB, db *pgwire.DB, id int64) map[string]string {
	out := map[string]string{}
	for _, p := range consumerPartitions(t, db, id) {
		out[p.Name] = fmt.Sprintf("%d seeded=%v", p.Floor, p.Seeded)
	}
	return out
}

// Create, create again, update, create-or-update, read and list, as
// JetStream's consumer create request asks; another tenant sees none of
// it.
func TestPutConsumerActions(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	push(t, db, write("js.put", "p", "a"))

	a := putConsumer(t, db, jsConsumer("js.put", "A", pgwire.JSDeliverAll, `{"ack_policy": "explicit", "max_deliver": 3}`), pgwire.JSActionCreate)
	if a.ID == 0 || !a.Durable || a.Start.Policy != pgwire.JSDeliverAll || a.CreatedAt.IsZero() {
		t.Fatalf("created: %+v", a)
	}
	// The same config, spelt otherwise: the consumer as it is.
	again := putConsumer(t, db, jsConsumer("js.put", "A", pgwire.JSDeliverAll, `{"max_deliver":3,"ack_policy":"explicit"}`), pgwire.JSActionCreate)
	if again.ID != a.ID || string(again.Config) != string(a.Config) {
		t.Fatalf("create with the same config: %+v, want %+v", again, a)
	}
	if _, err := db.PutConsumer(ctx, jsConsumer("js.put", "A", pgwire.JSDeliverAll, `{"max_deliver": 4}`), pgwire.JSActionCreate); !errors.Is(err, pgwire.ErrConsumerExists) {
		t.Fatalf("create with another config: %v, want ErrConsumerExists", err)
	}
	if _, err := db.PutConsumer(ctx, jsConsumer("js.put", "B", pgwire.JSDeliverAll, `{}`), pgwire.JSActionUpdate); !errors.Is(err, pgwire.ErrConsumerMissing) {
		t.Fatalf("update of none: %v, want ErrConsumerMissing", err)
	}
	if _, err := db.PutConsumer(ctx, jsConsumer("js.none", "B", pgwire.JSDeliverAll, `{}`), pgwire.JSActionUpdate); !errors.Is(err, pgwire.ErrConsumerMissing) {
		t.Fatalf("update of none on a queue not made yet: %v, want ErrConsumerMissing", err)
	}
	up := putConsumer(t, db, jsConsumer("js.put", "A", pgwire.JSDeliverNew, `{"max_deliver": 5}`), pgwire.JSActionUpdate)
	if up.ID != a.ID || string(up.Config) != `{"max_deliver": 5}` || up.Start.Policy != pgwire.JSDeliverAll {
		t.Fatalf("update: %+v (the config changes, the start stays)", up)
	}
	// Create-or-update makes a consumer, on a queue not made yet too.
	b := putConsumer(t, db, jsConsumer("js.put", "B", pgwire.JSDeliverNew, `{"x": 1}`), pgwire.JSActionCreateOrUpdate)
	fresh := putConsumer(t, db, jsConsumer("js.fresh", "C", pgwire.JSDeliverAll, `{}`), pgwire.JSActionCreateOrUpdate)
	if b.ID == a.ID || fresh.ID == 0 || len(consumerPartitions(t, db, fresh.ID)) != 0 {
		t.Fatalf("create-or-update: %+v %+v", b, fresh)
	}
	if b2 := putConsumer(t, db, jsConsumer("js.put", "B", pgwire.JSDeliverNew, `{"x": 2}`), pgwire.JSActionCreateOrUpdate); b2.ID != b.ID || string(b2.Config) != `{"x": 2}` {
		t.Fatalf("create-or-update of an existing one: %+v", b2)
	}

	got, err := db.GetConsumer(ctx, tenancy.TenantID{}, "js.put", "A")
	if err != nil || got.ID != a.ID || string(got.Config) != `{"max_deliver": 5}` || got.Queue != "js.put" {
		t.Fatalf("GetConsumer: %+v %v", got, err)
	}
	list, err := db.ListConsumers(ctx, tenancy.TenantID{}, "js.put")
	if err != nil || len(list) != 2 || list[0].Name != "A" || list[1].Name != "B" {
		t.Fatalf("ListConsumers: %+v %v", list, err)
	}

	other := tenancy.TenantID{1}
	if _, err := db.GetConsumer(ctx, other, "js.put", "A"); !errors.Is(err, pgwire.ErrConsumerMissing) {
		t.Fatalf("another tenant's GetConsumer: %v, want ErrConsumerMissing", err)
	}
	if l, err := db.ListConsumers(ctx, other, "js.put"); err != nil || len(l) != 0 {
		t.Fatalf("another tenant's ListConsumers: %+v %v", l, err)
	}
	if ok, err := db.DeleteConsumer(ctx, other, "js.put", "A"); ok || err != nil {
		t.Fatalf("another tenant's DeleteConsumer: %v %v", ok, err)
	}
	// Another tenant's consumer of the same names is its own.
	o := jsConsumer("js.put", "A", pgwire.JSDeliverAll, `{"other": true}`)
	o.Tenant = other
	if oc := putConsumer(t, db, o, pgwire.JSActionCreate); oc.ID == a.ID {
		t.Fatalf("another tenant's consumer is the default tenant's: %+v", oc)
	}
}

// Bad definitions are refused with what is wrong, and nothing is written.
func TestPutConsumerRefusesBadInput(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	before := count(t, db.Pool(), `SELECT (SELECT count(*) FROM queen.queues) + (SELECT count(*) FROM queen.jetstream_consumers)`)
	for _, c := range []struct {
		name   string
		c      pgwire.JSConsumer
		action string
	}{
		{"unknown action", jsConsumer("js.bad", "A", pgwire.JSDeliverAll, `{}`), "upsert"},
		{"no name", jsConsumer("js.bad", "", pgwire.JSDeliverAll, `{}`), ""},
		{"no queue", jsConsumer("", "A", pgwire.JSDeliverAll, `{}`), ""},
		{"the queue mode's group", jsConsumer("js.bad", pgwire.QueueMode, pgwire.JSDeliverAll, `{}`), ""},
		{"config not JSON", jsConsumer("js.bad", "A", pgwire.JSDeliverAll, `{"a":`), ""},
		{"config not an object", jsConsumer("js.bad", "A", pgwire.JSDeliverAll, `[1]`), ""},
		{"unknown policy", jsConsumer("js.bad", "A", "first", `{}`), ""},
		{"by_start_time without a time", jsConsumer("js.bad", "A", pgwire.JSDeliverByStartTime, `{}`), ""},
		{"by_start_sequence without a partition", jsConsumer("js.bad", "A", pgwire.JSDeliverByStartSequence, `{}`), ""},
		{"by_start_sequence of a partition the queue lacks",
			pgwire.JSConsumer{Queue: "js.bad", Name: "A", Config: []byte(`{}`), Start: pgwire.JSStart{Policy: pgwire.JSDeliverByStartSequence, PartitionID: 99, Offset: 1}}, ""},
	} {
		if _, err := db.PutConsumer(ctx, c.c, c.action); err == nil {
			t.Errorf("%s: accepted", c.name)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
	}
	if after := count(t, db.Pool(), `SELECT (SELECT count(*) FROM queen.queues) + (SELECT count(*) FROM queen.jetstream_consumers)`); after != before {
		t.Fatalf("%d rows before the refused puts, %d after", before, after)
	}
}

// Each deliver policy seeds the floors of the partitions there are as
// jetstream_consumer_put_v1 says, and the partitions made later from the
// subscription.
func TestPutConsumerSeedsByDeliverPolicy(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	const q = "js.seed"
	res := push(t, db, write(q, "p0", "a1", "a2", "a3"), write(q, "p1", "b1", "b2"))
	p1 := res[1].PartitionID
	var between time.Time
	if err := db.Pool().QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&between); err != nil {
		t.Fatal(err)
	}
	// p2 holds the newest message: last delivers it, and one more of p0.
	push(t, db, write(q, "p0", "a4"))
	push(t, db, write(q, "p2", "c1", "c2"))

	cases := []struct {
		start pgwire.JSStart
		want  map[string]string
	}{
		{pgwire.JSStart{Policy: pgwire.JSDeliverAll}, map[string]string{"p0": "0 seeded=true", "p1": "0 seeded=true", "p2": "0 seeded=true"}},
		{pgwire.JSStart{Policy: pgwire.JSDeliverNew}, map[string]string{"p0": "4 seeded=true", "p1": "2 seeded=true", "p2": "2 seeded=true"}},
		{pgwire.JSStart{Policy: pgwire.JSDeliverLast}, map[string]string{"p0": "4 seeded=true", "p1": "2 seeded=true", "p2": "1 seeded=true"}},
		{pgwire.JSStart{Policy: pgwire.JSDeliverLastPerSubject}, map[string]string{"p0": "3 seeded=true", "p1": "1 seeded=true", "p2": "1 seeded=true"}},
		{pgwire.JSStart{Policy: pgwire.JSDeliverByStartTime, Time: between}, map[string]string{"p0": "3 seeded=true", "p1": "2 seeded=true", "p2": "0 seeded=true"}},
		{pgwire.JSStart{Policy: pgwire.JSDeliverByStartSequence, PartitionID: p1, Offset: 2}, map[string]string{"p0": "0 seeded=false", "p1": "1 seeded=true", "p2": "0 seeded=false"}},
	}
	ids := map[string]int64{}
	for _, c := range cases {
		jc := jsConsumer(q, "c-"+c.start.Policy, "", `{}`)
		jc.Start = c.start
		got := putConsumer(t, db, jc, pgwire.JSActionCreate)
		ids[c.start.Policy] = got.ID
		if f := floors(t, db, got.ID); fmt.Sprint(f) != fmt.Sprint(c.want) {
			t.Errorf("%s: floors %v, want %v", c.start.Policy, f, c.want)
		}
		if got.Start.Policy != c.start.Policy || !got.Start.Time.Equal(c.start.Time) || got.Start.PartitionID != c.start.PartitionID || got.Start.Offset != c.start.Offset {
			t.Errorf("%s: start stored as %+v", c.start.Policy, got.Start)
		}
	}
	// A partition made later: every policy reads it from its start (its
	// messages came after the consumer), by the subscription, with no
	// cursor row yet.
	push(t, db, write(q, "p3", "d1"))
	for policy, id := range ids {
		for _, p := range consumerPartitions(t, db, id) {
			if p.Name == "p3" && (p.Floor != 0 || p.Seeded || p.Last != 1 || p.First != 1) {
				t.Errorf("%s: a later partition %+v, want floor 0, not seeded", policy, p)
			}
		}
	}
	// A consumer taking the name of a Queen group goes on from its cursor.
	r := pop(t, db, pgwire.PopRequest{Queue: q, Partition: "p0", Group: "queen-group", SubscriptionMode: "all", Batch: 2})
	ack(t, db, r.PartitionID, "queen-group", nil, completed(txids(r.Messages)...)...)
	g := putConsumer(t, db, jsConsumer(q, "queen-group", pgwire.JSDeliverNew, `{}`), pgwire.JSActionCreate)
	if f := floors(t, db, g.ID); f["p0"] != "2 seeded=true" || f["p1"] != "2 seeded=true" {
		t.Errorf("a consumer named as a Queen group: floors %v, want the group's cursor 2 on p0 and the policy's start (new) on p1", f)
	}
	if _, err := db.ConsumerPartitions(ctx, 1<<40); !errors.Is(err, pgwire.ErrConsumerMissing) {
		t.Fatalf("ConsumerPartitions of no consumer: %v, want ErrConsumerMissing", err)
	}
}

// Deleting a consumer takes its cursor rows and subscription with it (a
// consumer created again under its name starts anew); deleting its queue
// takes the consumers, and the purge of a deleted queue takes a
// definition made while the delete ran.
func TestDeleteConsumerAndItsQueue(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	const q = "js.del"
	res := push(t, db, write(q, "p0", "a1", "a2"), write(q, "p1", "b1"))
	a := putConsumer(t, db, jsConsumer(q, "A", pgwire.JSDeliverAll, `{}`), pgwire.JSActionCreate)
	b := putConsumer(t, db, jsConsumer(q, "B", pgwire.JSDeliverAll, `{}`), pgwire.JSActionCreate)
	commitAcks(t, db, pgwire.JSAckUpdate{ConsumerID: a.ID, PartitionID: res[0].PartitionID, Floor: 2},
		pgwire.JSAckUpdate{ConsumerID: b.ID, PartitionID: res[0].PartitionID, Floor: 1})

	if ok, err := db.DeleteConsumer(ctx, tenancy.TenantID{}, q, "A"); !ok || err != nil {
		t.Fatalf("DeleteConsumer: %v %v", ok, err)
	}
	if ok, err := db.DeleteConsumer(ctx, tenancy.TenantID{}, q, "A"); ok || err != nil {
		t.Fatalf("DeleteConsumer again: %v %v", ok, err)
	}
	if n := count(t, db.Pool(), `SELECT (SELECT count(*) FROM queen.consumer_cursors WHERE consumer_group = 'A')
		+ (SELECT count(*) FROM queen.consumer_subscriptions WHERE consumer_group = 'A')`); n != 0 {
		t.Fatalf("%d cursor and subscription rows of the deleted consumer left", n)
	}
	// An update for the deleted consumer writes nothing.
	commitAcks(t, db, pgwire.JSAckUpdate{ConsumerID: a.ID, PartitionID: res[0].PartitionID, Floor: 2})
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.consumer_cursors WHERE consumer_group = 'A'`); n != 0 {
		t.Fatalf("an update of a deleted consumer made %d cursor rows", n)
	}
	if f := floors(t, db, b.ID); f["p0"] != "1 seeded=true" {
		t.Fatalf("the other consumer's floors: %v", f)
	}
	again := putConsumer(t, db, jsConsumer(q, "A", pgwire.JSDeliverNew, `{}`), pgwire.JSActionCreate)
	if f := floors(t, db, again.ID); f["p0"] != "2 seeded=true" || f["p1"] != "1 seeded=true" || again.ID == a.ID {
		t.Fatalf("created again with deliver policy new: floors %v", f)
	}

	d, err := db.DeleteQueue(ctx, tenancy.TenantID{}, q)
	if err != nil || !d.Existed {
		t.Fatalf("DeleteQueue: %+v %v", d, err)
	}
	if n := count(t, db.Pool(), `SELECT (SELECT count(*) FROM queen.jetstream_consumers) + (SELECT count(*) FROM queen.consumer_cursors)`); n != 0 {
		t.Fatalf("%d consumer rows left after the queue's delete", n)
	}
	if _, err := db.GetConsumer(ctx, tenancy.TenantID{}, q, "B"); !errors.Is(err, pgwire.ErrConsumerMissing) {
		t.Fatalf("GetConsumer after the queue's delete: %v", err)
	}
	// A definition of the deleted queue that the delete did not see.
	if _, err := db.Pool().Exec(ctx, `INSERT INTO queen.jetstream_consumers (queue_id, name, durable, config, deliver_policy)
		VALUES ($1, 'late', true, '{}', 'all')`, d.QueueID); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10 && count(t, db.Pool(), `SELECT count(*) FROM queen.log_purges`) > 0; i++ {
		if _, err := db.PurgeStep(ctx, 10, 1000); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.jetstream_consumers`); n != 0 {
		t.Fatalf("the purge left %d definitions of the deleted queue", n)
	}
}

// TouchConsumers moves the last-active time of the consumers named, and
// of no other.
func TestTouchConsumers(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	a := putConsumer(t, db, jsConsumer("js.touch", "A", pgwire.JSDeliverAll, `{}`), pgwire.JSActionCreate)
	b := putConsumer(t, db, jsConsumer("js.touch", "B", pgwire.JSDeliverAll, `{}`), pgwire.JSActionCreate)
	if err := db.TouchConsumers(ctx, []int64{b.ID, 1 << 40}); err != nil {
		t.Fatal(err)
	}
	ga, _ := db.GetConsumer(ctx, tenancy.TenantID{}, "js.touch", "A")
	gb, _ := db.GetConsumer(ctx, tenancy.TenantID{}, "js.touch", "B")
	if !ga.LastActiveAt.Equal(a.LastActiveAt) || !gb.LastActiveAt.After(b.LastActiveAt) {
		t.Fatalf("last active: A %v -> %v (untouched), B %v -> %v (touched)", a.LastActiveAt, ga.LastActiveAt, b.LastActiveAt, gb.LastActiveAt)
	}
}

// Creates of one name at once, on a queue not made yet: with one config,
// every one answers the same consumer; with a config each, one is created
// and every other is refused with ErrConsumerExists.
func TestPutConsumerConcurrentCreates(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	const n = 8
	for _, sameConfig := range []bool{true, false} {
		q := fmt.Sprint("js.race.", sameConfig)
		ids := make([]int64, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			config := `{"same": true}`
			if !sameConfig {
				config = fmt.Sprintf(`{"k": %d}`, i)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				c, err := db.PutConsumer(context.Background(), jsConsumer(q, "C", pgwire.JSDeliverAll, config), pgwire.JSActionCreate)
				ids[i], errs[i] = c.ID, err
			}()
		}
		close(start)
		wg.Wait()
		created, refused := map[int64]bool{}, 0
		for i, err := range errs {
			switch {
			case err == nil:
				created[ids[i]] = true
			case errors.Is(err, pgwire.ErrConsumerExists):
				refused++
			default:
				t.Fatalf("same config %v: create %d: %v", sameConfig, i, err)
			}
		}
		if len(created) != 1 || (sameConfig && refused != 0) || (!sameConfig && refused != n-1) {
			t.Fatalf("same config %v: consumers answered %v, %d refused", sameConfig, created, refused)
		}
		if rows := count(t, db.Pool(), `SELECT count(*) FROM queen.jetstream_consumers j JOIN queen.queues q ON q.id = j.queue_id WHERE q.name = $1`, q); rows != 1 {
			t.Fatalf("same config %v: %d definitions", sameConfig, rows)
		}
	}
}

// IdleConsumers lists, over every tenant, the ephemeral consumers and the
// durable ones with a threshold, once their last activity is older than
// the threshold plus the grace (a negative grace stands for time passed).
func TestIdleConsumers(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	other := tenancy.TenantID{1}
	eph := jsConsumer("js.idle", "E", pgwire.JSDeliverAll, `{}`)
	eph.Durable = false
	putConsumer(t, db, eph, pgwire.JSActionCreate)
	eph.Tenant = other
	putConsumer(t, db, eph, pgwire.JSActionCreate)
	putConsumer(t, db, jsConsumer("js.idle", "D2h", pgwire.JSDeliverAll, `{"InactiveThreshold": 7200000000000}`), pgwire.JSActionCreate)
	putConsumer(t, db, jsConsumer("js.idle", "Dnever", pgwire.JSDeliverAll, `{"InactiveThreshold": 0}`), pgwire.JSActionCreate)
	idle := func(grace time.Duration) string {
		t.Helper()
		cs, err := db.IdleConsumers(ctx, grace, "InactiveThreshold", 100)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range cs {
			if c.Queue == "js.idle" {
				out = append(out, fmt.Sprintf("%s/%v", c.Name, c.Tenant == other))
			}
		}
		return fmt.Sprint(out)
	}
	for grace, want := range map[time.Duration]string{
		time.Hour:       "[]",
		-time.Hour:      "[E/false E/true]",
		-3 * time.Hour:  "[E/false E/true D2h/false]",
		-99 * time.Hour: "[E/false E/true D2h/false]",
	} {
		if got := idle(grace); got != want {
			t.Fatalf("idle with grace %v: %s, want %s", grace, got, want)
		}
	}
}
