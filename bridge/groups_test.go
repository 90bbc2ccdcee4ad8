package bridge_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// Queen's consumer-group routes (docs/admin-groups.md) and subscriptionMode
// on pop (docs/consumers.md), over HTTP as Queen's clients send them.

// cgOK sends a request that must answer 200 and decodes the answer.
func (n *node) cgOK(method, path, body string, v any, header ...string) {
	n.t.Helper()
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	n.callJSON(method, path, b, v, header...)
}

type cgSummary struct {
	Name                  string   `json:"name"`
	QueueName             string   `json:"queueName"`
	Topics                []string `json:"topics"`
	Members               int      `json:"members"`
	PartitionsWithLag     int      `json:"partitionsWithLag"`
	TotalLag              int64    `json:"totalLag"`
	MaxTimeLag            int64    `json:"maxTimeLag"`
	State                 string   `json:"state"`
	SubscriptionMode      *string  `json:"subscriptionMode"`
	SubscriptionTimestamp *string  `json:"subscriptionTimestamp"`
	SubscriptionCreatedAt *string  `json:"subscriptionCreatedAt"`
}

type cgPartition struct {
	Partition      string  `json:"partition"`
	WorkerID       *string `json:"workerId"`
	LastConsumedAt *string `json:"lastConsumedAt"`
	TotalConsumed  int64   `json:"totalConsumed"`
	OffsetLag      int64   `json:"offsetLag"`
	TimeLagSeconds int64   `json:"timeLagSeconds"`
	LeaseActive    bool    `json:"leaseActive"`
}

type cgSeekAnswer struct {
	Success           bool    `json:"success"`
	ConsumerGroup     string  `json:"consumerGroup"`
	QueueName         string  `json:"queueName"`
	SeekToEnd         bool    `json:"seekToEnd"`
	TargetTimestamp   *string `json:"targetTimestamp"`
	PartitionsUpdated int     `json:"partitionsUpdated"`
}

type cgDeleteAnswer struct {
	Success           bool   `json:"success"`
	ConsumerGroup     string `json:"consumerGroup"`
	QueueName         string `json:"queueName"`
	DeletedPartitions int    `json:"deletedPartitions"`
	MetadataDeleted   bool   `json:"metadataDeleted"`
}

func cgPath(group string, rest ...string) string {
	p := "/api/v1/consumer-groups/" + url.PathEscape(group)
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

func (n *node) cgList() map[string]cgSummary {
	n.t.Helper()
	var list []cgSummary
	n.cgOK("GET", "/api/v1/consumer-groups", "", &list)
	out := map[string]cgSummary{}
	for _, g := range list {
		out[g.Name+"/"+g.QueueName] = g
	}
	if len(out) != len(list) {
		n.t.Fatalf("a (group, queue) listed twice: %+v", list)
	}
	return out
}

func (n *node) cgSeek(group, queue, body string) cgSeekAnswer {
	n.t.Helper()
	var a cgSeekAnswer
	n.cgOK("POST", cgPath(group, "queues", queue, "seek"), body, &a)
	if !a.Success || a.ConsumerGroup != group || a.QueueName != queue {
		n.t.Fatalf("seek %s on %s: %+v", group, queue, a)
	}
	return a
}

func (n *node) cgDelete(path string) cgDeleteAnswer {
	n.t.Helper()
	var a cgDeleteAnswer
	n.cgOK("DELETE", path, "", &a)
	if !a.Success {
		n.t.Fatalf("delete %s: %+v", path, a)
	}
	return a
}

// cgPop pops (any partition when partition is "") and answers the
// transactionIds delivered, in order, with the pop.
func (n *node) cgPop(queue, partition string, params ...string) ([]string, popped) {
	n.t.Helper()
	_, p := n.popHTTP(queue, partition, params...)
	var ids []string
	for _, m := range p.Messages {
		ids = append(ids, m.TransactionID)
	}
	return ids, p
}

// cgDrain pops group's every message of a queue, any partition, acking each
// pop, until a pop answers 204; it answers how many came.
func (n *node) cgDrain(queue, group string) int {
	n.t.Helper()
	got := 0
	for {
		status, p := n.popHTTP(queue, "", "consumerGroup", group, "batch", "10")
		if status == http.StatusNoContent {
			return got
		}
		got += len(p.Messages)
		for _, a := range n.ackAll(p, group, nil) {
			if !a.Success {
				n.t.Fatalf("ack: %+v", a)
			}
		}
	}
}

// subscriptionMode=from_beginning, typos and all read from the beginning;
// new and new-only only what comes after; an absent mode takes the
// configured default. Never a 400 for a mode.
func TestPopSubscriptionModeValues(t *testing.T) {
	n := newNode(t, nodeOpts{})
	n.pushHTTP(items(item("m", "p", "old-1"), item("m", "p", "old-2")))
	cases := []struct {
		group, mode string
		want        []string
	}{
		{"beginning", "from_beginning", []string{"old-1", "old-2"}},
		{"all", "all", []string{"old-1", "old-2"}},
		{"typo", "nwe", []string{"old-1", "old-2"}},
		{"absent", "", []string{"old-1", "old-2"}},
		{"new", "new", nil},
		{"newonly", "new-only", nil},
	}
	for _, c := range cases {
		params := []string{"consumerGroup", c.group, "batch", "10"}
		if c.mode != "" {
			params = append(params, "subscriptionMode", c.mode)
		}
		got, p := n.cgPop("m", "p", params...)
		if !slices.Equal(got, c.want) {
			t.Fatalf("mode %q: got %v, want %v", c.mode, got, c.want)
		}
		if len(got) > 0 {
			n.ackAll(p, c.group, nil)
		}
	}
	n.pushHTTP(items(item("m", "p", "new-1")))
	for _, c := range cases {
		if got, _ := n.cgPop("m", "p", "consumerGroup", c.group, "batch", "10"); !slices.Equal(got, []string{"new-1"}) {
			t.Fatalf("group %s after a push: %v", c.group, got)
		}
	}
	// The choice is stored per (group, queue), all included.
	if c := n.count(`SELECT count(*) FROM queen.consumer_subscriptions WHERE mode = 'new'`); c != 2 {
		t.Fatalf("%d groups stored new", c)
	}
	if c := n.count(`SELECT count(*) FROM queen.consumer_subscriptions WHERE mode = 'all' AND consumer_group <> '__QUEUE_MODE__'`); c != 4 {
		t.Fatalf("%d groups stored all", c)
	}
	gs := n.cgList()
	if g := gs["newonly/m"]; g.SubscriptionMode == nil || *g.SubscriptionMode != "new" || g.SubscriptionTimestamp == nil {
		t.Fatalf("new-only listed as %+v", g)
	}
	if g := gs["beginning/m"]; g.SubscriptionMode != nil || g.SubscriptionTimestamp != nil || g.SubscriptionCreatedAt == nil {
		t.Fatalf("from_beginning listed as %+v", g)
	}

	// QUEEN_DEFAULT_SUBSCRIPTION_MODE=new-only: a pop naming no mode starts
	// at the end; one naming all still reads everything.
	d := newNode(t, nodeOpts{subMode: "new-only"})
	d.pushHTTP(items(item("m", "p", "old-1")))
	if got, _ := d.cgPop("m", "p", "consumerGroup", "absent"); got != nil {
		t.Fatalf("default new: %v", got)
	}
	if got, _ := d.cgPop("m", "p", "consumerGroup", "all", "subscriptionMode", "all"); !slices.Equal(got, []string{"old-1"}) {
		t.Fatalf("mode all under default new: %v", got)
	}
}

// The list, one group's detail and the lagging partitions, in the bridge's
// terms: cursors, high-water marks and the segment after each cursor.
func TestConsumerGroupReads(t *testing.T) {
	n := newNode(t, nodeOpts{})
	n.pushN("orders", 2, 3)
	if got, p := n.cgPop("orders", "p0", "consumerGroup", "g1", "batch", "10"); len(got) != 3 {
		t.Fatalf("g1 on p0: %v", got)
	} else {
		n.ackAll(p, "g1", nil)
	}
	_, held := n.cgPop("orders", "p1", "consumerGroup", "g1", "batch", "2") // a live lease, nothing acknowledged
	if got, _ := n.cgPop("orders", "p0", "consumerGroup", "g2", "subscriptionMode", "new"); got != nil {
		t.Fatalf("g2 (new): %v", got)
	}
	if got, p := n.cgPop("orders", "p0"); len(got) != 1 {
		t.Fatalf("queue mode: %v", got)
	} else {
		n.ackAll(p, "", nil)
	}

	gs := n.cgList()
	if len(gs) != 3 {
		t.Fatalf("listed %v", gs)
	}
	g1 := gs["g1/orders"]
	if g1.Members != 2 || g1.PartitionsWithLag != 1 || g1.TotalLag != 3 || g1.State != "Stable" || !slices.Equal(g1.Topics, []string{"orders"}) ||
		g1.SubscriptionMode != nil || g1.SubscriptionCreatedAt == nil {
		t.Fatalf("g1: %+v", g1)
	}
	if g2 := gs["g2/orders"]; g2.Members != 1 || g2.TotalLag != 0 || g2.State != "Dead" || g2.SubscriptionMode == nil || *g2.SubscriptionMode != "new" {
		t.Fatalf("g2: %+v", g2)
	}
	if q := gs["__QUEUE_MODE__/orders"]; q.Members != 1 || q.PartitionsWithLag != 1 || q.TotalLag != 2 || q.State != "Stable" {
		t.Fatalf("queue mode: %+v", q)
	}

	var detail map[string]struct {
		Partitions []cgPartition `json:"partitions"`
	}
	n.cgOK("GET", cgPath("g1"), "", &detail)
	ps := detail["orders"].Partitions
	if len(detail) != 1 || len(ps) != 2 {
		t.Fatalf("g1's detail: %+v", detail)
	}
	if p := ps[0]; p.Partition != "p0" || p.WorkerID != nil || p.LeaseActive || p.TotalConsumed != 3 || p.OffsetLag != 0 || p.LastConsumedAt == nil {
		t.Fatalf("p0: %+v", p)
	}
	if p := ps[1]; p.Partition != "p1" || p.WorkerID == nil || *p.WorkerID != held.LeaseID || !p.LeaseActive || p.TotalConsumed != 0 ||
		p.OffsetLag != 3 || p.LastConsumedAt != nil {
		t.Fatalf("p1: %+v (lease %s)", p, held.LeaseID)
	}
	var none map[string]any
	if n.cgOK("GET", cgPath("nobody"), "", &none); len(none) != 0 {
		t.Fatalf("unknown group: %v", none)
	}

	// Age the messages: p0's by three hours, p1's by two.
	for part, age := range map[string]string{"p0": "3 hours", "p1": "2 hours"} {
		if _, err := n.db.Pool().Exec(t.Context(), `UPDATE queen.log_segments SET created_at = created_at - $2::interval
			WHERE partition_id = (SELECT id FROM queen.log_partitions WHERE name = $1)`, part, age); err != nil {
			t.Fatal(err)
		}
	}
	type lagging struct {
		Group      string  `json:"consumer_group"`
		Queue      string  `json:"queue_name"`
		Partition  string  `json:"partition_name"`
		ID         string  `json:"partition_id"`
		Worker     *string `json:"worker_id"`
		OffsetLag  int64   `json:"offset_lag"`
		TimeLag    int64   `json:"time_lag_seconds"`
		LagHours   float64 `json:"lag_hours"`
		Oldest     *string `json:"oldest_unconsumed_at"`
		LastBefore *string `json:"last_consumed_at"`
	}
	var lag []lagging
	n.cgOK("GET", "/api/v1/consumer-groups/lagging", "", &lag) // minLagSeconds 3600 by default
	p1ID := fmt.Sprint(n.count(`SELECT id FROM queen.log_partitions WHERE name = 'p1'`))
	if len(lag) != 2 {
		t.Fatalf("lagging: %+v", lag)
	}
	if l := lag[0]; l.Group != "__QUEUE_MODE__" || l.Partition != "p0" || l.OffsetLag != 2 || l.TimeLag < 3*3600 || l.LagHours < 3 || l.Oldest == nil || l.LastBefore == nil {
		t.Fatalf("the oldest lag first: %+v", l)
	}
	if l := lag[1]; l.Group != "g1" || l.Queue != "orders" || l.Partition != "p1" || l.ID != p1ID || l.Worker == nil || *l.Worker != held.LeaseID ||
		l.OffsetLag != 3 || l.TimeLag < 2*3600 || l.TimeLag >= 3*3600 || l.LastBefore != nil {
		t.Fatalf("g1 on p1: %+v", l)
	}
	if n.cgOK("GET", "/api/v1/consumer-groups/lagging?minLagSeconds=36000", "", &lag); len(lag) != 0 {
		t.Fatalf("lagging over 10 h: %+v", lag)
	}
	if status, out := n.get("/api/v1/consumer-groups/lagging?minLagSeconds=an-hour"); status != http.StatusBadRequest || !strings.Contains(string(out), "minLagSeconds") {
		t.Fatalf("a bad minLagSeconds: %d %s", status, out)
	}
	if g1 := n.cgList()["g1/orders"]; g1.State != "Lagging" || g1.MaxTimeLag < 2*3600 {
		t.Fatalf("g1 after the ageing: %+v", g1)
	}
}

// A seek backwards delivers again, in order, what was created after its
// time; acknowledgements naming a lease from before the seek fail, by the
// whole-batch path and the general one; toEnd wins over a timestamp.
func TestSeekBackwardsRedelivers(t *testing.T) {
	n := newNode(t, nodeOpts{})
	var created []string
	for i := 1; i <= 3; i++ { // one segment each, each created after the last
		created = append(created, n.pushHTTP(items(item("s", "p", fmt.Sprintf("m%d", i))))[0].CreatedAt)
	}
	if got, p := n.cgPop("s", "p", "consumerGroup", "g", "batch", "10"); len(got) != 3 {
		t.Fatalf("first: %v", got)
	} else {
		n.ackAll(p, "g", nil)
	}
	if got, _ := n.cgPop("s", "p", "consumerGroup", "g"); got != nil {
		t.Fatalf("after the acks: %v", got)
	}
	first, err := time.Parse(time.RFC3339Nano, created[0])
	if err != nil {
		t.Fatal(err)
	}
	before := first.Add(-time.Millisecond).Format(time.RFC3339Nano)
	if a := n.cgSeek("g", "s", fmt.Sprintf(`{"timestamp":%q}`, before)); a.SeekToEnd || a.TargetTimestamp == nil || a.PartitionsUpdated != 1 {
		t.Fatalf("seek: %+v", a)
	}
	got, old := n.cgPop("s", "p", "consumerGroup", "g", "batch", "10")
	if !slices.Equal(got, []string{"m1", "m2", "m3"}) {
		t.Fatalf("after the seek back: %v", got)
	}
	// To m2's own time: what was created after it, m3, comes again, at
	// once: the seek dropped the lease the last pop took.
	n.cgSeek("g", "s", fmt.Sprintf(`{"timestamp":%q}`, created[1]))
	got, p := n.cgPop("s", "p", "consumerGroup", "g", "batch", "10")
	if !slices.Equal(got, []string{"m3"}) {
		t.Fatalf("after the seek to m2's time: %v", got)
	}
	for _, a := range n.ackAll(old, "g", nil) {
		if a.Success {
			t.Fatalf("a whole-batch ack of the lease from before the seek: %+v", a)
		}
	}
	one, _ := json.Marshal(map[string]string{"transactionId": "m3", "partitionId": old.PartitionID, "consumerGroup": "g", "leaseId": old.LeaseID})
	if code, out := n.post("/api/v1/ack", one); code != http.StatusOK || !strings.Contains(string(out), `"success":false`) {
		t.Fatalf("an ack of m3 under the lease from before the seek: %d %s", code, out)
	}
	for _, a := range n.ackAll(p, "g", nil) {
		if !a.Success {
			t.Fatalf("the new lease's ack: %+v", a)
		}
	}
	if a := n.cgSeek("g", "s", fmt.Sprintf(`{"toEnd":true,"timestamp":%q}`, before)); !a.SeekToEnd || a.TargetTimestamp != nil {
		t.Fatalf("toEnd wins: %+v", a)
	}
	if got, _ := n.cgPop("s", "p", "consumerGroup", "g"); got != nil {
		t.Fatalf("after the seek to the end: %v", got)
	}

	// Any-partition pops: this bridge's marks found the queue drained; a
	// seek back makes its partitions claimable again.
	n.pushN("a", 3, 2)
	if got := n.cgDrain("a", "g"); got != 6 {
		t.Fatalf("drained %d of 6", got)
	}
	if a := n.cgSeek("g", "a", `{"timestamp":"2000-01-01T00:00:00Z"}`); a.PartitionsUpdated != 3 {
		t.Fatalf("seek of a: %+v", a)
	}
	if got := n.cgDrain("a", "g"); got != 6 {
		t.Fatalf("after the seek back, %d of 6 again", got)
	}
}

// A seek to the end skips everything stored, on every partition of the
// queue, the group's first pop included; a seeked cursor is never seeded
// again from a subscription. The partition form, and the refusals.
func TestSeekToEndSkips(t *testing.T) {
	n := newNode(t, nodeOpts{})
	n.pushN("e", 3, 2)
	if a := n.cgSeek("g", "e", `{"toEnd":true}`); a.PartitionsUpdated != 3 {
		t.Fatalf("seek: %+v", a)
	}
	if status, _ := n.popHTTP("e", "", "consumerGroup", "g", "batch", "10", "partitions", "3"); status != http.StatusNoContent {
		t.Fatalf("after the seek to the end: %d", status)
	}
	n.pushHTTP(items(item("e", "p1", "later")))
	if got, _ := n.cgPop("e", "p1", "consumerGroup", "g", "batch", "10"); !slices.Equal(got, []string{"later"}) {
		t.Fatalf("after a push: %v", got)
	}
	// A group that seeks before its first pop keeps the seek's cursor: its
	// first pop's subscriptionMode=new does not move it.
	n.cgSeek("late", "e", `{"timestamp":"2000-01-01T00:00:00Z"}`)
	if got, _ := n.cgPop("e", "p0", "consumerGroup", "late", "batch", "10", "subscriptionMode", "new"); !slices.Equal(got, []string{"p0-0", "p0-1"}) {
		t.Fatalf("a seeked group's first pop: %v", got)
	}

	var ps struct {
		Success       bool   `json:"success"`
		PartitionName string `json:"partitionName"`
		Updated       bool   `json:"updated"`
		CursorMovedTo int64  `json:"cursorMovedTo"`
	}
	n.cgOK("POST", cgPath("late", "queues", "e", "partitions", "p2", "seek"), "", &ps)
	if !ps.Success || ps.PartitionName != "p2" || !ps.Updated || ps.CursorMovedTo != 2 {
		t.Fatalf("partition seek: %+v", ps)
	}
	if got, _ := n.cgPop("e", "p2", "consumerGroup", "late", "batch", "10"); got != nil {
		t.Fatalf("p2 after its seek: %v", got)
	}
	for _, path := range []string{cgPath("late", "queues", "e", "partitions", "p9", "seek"), cgPath("late", "queues", "nope", "partitions", "p0", "seek")} {
		if status, out := n.call("POST", path, nil); status != http.StatusNotFound || string(out) != `{"success":false,"error":"Partition not found"}` {
			t.Fatalf("%s: %d %s", path, status, out)
		}
	}
	for body, want := range map[string]string{
		``:                       "Must specify either 'toEnd': true or 'timestamp'",
		`{}`:                     "Must specify either 'toEnd': true or 'timestamp'",
		`{"toEnd":false}`:        "Must specify either 'toEnd': true or 'timestamp'",
		`{"timestamp":"friday"}`: "timestamp must be an RFC 3339 time",
		`[1]`:                    "seek body",
	} {
		if status, out := n.call("POST", cgPath("g", "queues", "e", "seek"), []byte(body)); status != http.StatusBadRequest || !strings.Contains(string(out), want) {
			t.Errorf("seek body %q: %d %s", body, status, out)
		}
	}
	if a := n.cgSeek("g", "nope", `{"toEnd":true}`); a.PartitionsUpdated != 0 {
		t.Fatalf("an unknown queue: %+v", a)
	}
}

// Deleting a group lets it consume again from its subscription: kept
// (deleteMetadata=false), a new group restarts at its original time;
// deleted, the next pop's parameters seed it. Dead letters stay. The queue
// form deletes on one queue.
func TestDeleteGroupConsumesAgain(t *testing.T) {
	n := newNode(t, nodeOpts{})
	n.pushHTTP(items(item("d", "p", "m1"), item("d", "p", "m2")))
	if got, _ := n.cgPop("d", "p", "consumerGroup", "g", "subscriptionMode", "new"); got != nil {
		t.Fatalf("new: %v", got)
	}
	n.pushHTTP(items(item("d", "p", "m3")))
	got, p := n.cgPop("d", "p", "consumerGroup", "g", "batch", "10")
	if !slices.Equal(got, []string{"m3"}) {
		t.Fatalf("after a push: %v", got)
	}
	n.ackAll(p, "g", func(string) string { return "dlq" })
	if a := n.cgDelete(cgPath("g") + "?deleteMetadata=false"); a.DeletedPartitions != 1 || a.MetadataDeleted || a.ConsumerGroup != "g" {
		t.Fatalf("delete keeping the subscription: %+v", a)
	}
	n.pushHTTP(items(item("d", "p", "m4")))
	got, held := n.cgPop("d", "p", "consumerGroup", "g", "batch", "10", "subscriptionMode", "all")
	if !slices.Equal(got, []string{"m3", "m4"}) {
		t.Fatalf("from the kept subscription: %v", got)
	}
	for i, c := range []struct {
		query string
		want  bool
	}{{"?deleteMetadata=yes", false}, {"?deleteMetadata=1", true}, {"?deleteMetadata=TRUE", false}, {"", true}} {
		if i > 0 {
			n.popHTTP("d", "p", "consumerGroup", "g") // a cursor to delete
		}
		if a := n.cgDelete(cgPath("g") + c.query); a.MetadataDeleted != c.want || a.DeletedPartitions != 1 {
			t.Fatalf("delete%s: %+v", c.query, a)
		}
		if i == 0 {
			// The lease the delete removed acknowledges nothing.
			for _, a := range n.ackAll(held, "g", nil) {
				if a.Success {
					t.Fatalf("an ack of a deleted lease: %+v", a)
				}
			}
		}
	}
	if got, _ := n.cgPop("d", "p", "consumerGroup", "g", "batch", "10", "subscriptionMode", "from_beginning"); !slices.Equal(got, []string{"m1", "m2", "m3", "m4"}) {
		t.Fatalf("seeded again by the pop: %v", got)
	}
	if c := n.count(`SELECT count(*) FROM queen.dead_letters WHERE consumer_group = 'g'`); c != 1 {
		t.Fatalf("%d dead letters after the deletes", c)
	}
	if a := n.cgDelete(cgPath("nobody")); a.DeletedPartitions != 0 || !a.MetadataDeleted {
		t.Fatalf("an unknown group: %+v", a)
	}

	// The queue form.
	n.pushHTTP(items(item("x", "p", "x1")))
	n.popHTTP("x", "p", "consumerGroup", "g")
	if a := n.cgDelete(cgPath("g", "queues", "x")); a.QueueName != "x" || a.DeletedPartitions != 1 {
		t.Fatalf("delete on x: %+v", a)
	}
	gs := n.cgList()
	if _, ok := gs["g/x"]; ok || gs["g/d"].Members != 1 {
		t.Fatalf("after the delete on x: %+v", gs)
	}
	if c := n.count(`SELECT count(*) FROM queen.consumer_subscriptions s JOIN queen.queues q ON q.id = s.queue_id WHERE s.consumer_group = 'g'`); c != 1 {
		t.Fatalf("%d subscriptions of g left, want d's", c)
	}
}

// A subscription update decides where the partitions a group has not
// popped start; it moves no cursor. Bad bodies are 400.
func TestSubscriptionUpdateMovesUnclaimedStarts(t *testing.T) {
	n := newNode(t, nodeOpts{})
	n.pushHTTP(items(item("u", "p0", "a1")))
	if got, p := n.cgPop("u", "p0", "consumerGroup", "g", "batch", "10"); len(got) != 1 {
		t.Fatalf("p0: %v", got)
	} else {
		n.ackAll(p, "g", nil)
	}
	at := n.pushHTTP(items(item("u", "p1", "b1")))[0].CreatedAt
	n.pushHTTP(items(item("u", "p1", "b2"), item("u", "p0", "a2")))
	var ans struct {
		Success       bool   `json:"success"`
		ConsumerGroup string `json:"consumerGroup"`
		NewTimestamp  string `json:"newTimestamp"`
		RowsUpdated   int64  `json:"rowsUpdated"`
	}
	n.cgOK("POST", cgPath("g", "subscription"), fmt.Sprintf(`{"subscriptionTimestamp":%q}`, at), &ans)
	if !ans.Success || ans.ConsumerGroup != "g" || ans.NewTimestamp != at || ans.RowsUpdated != 1 {
		t.Fatalf("update: %+v", ans)
	}
	if got, _ := n.cgPop("u", "p1", "consumerGroup", "g", "batch", "10"); !slices.Equal(got, []string{"b2"}) {
		t.Fatalf("p1, never popped: %v", got)
	}
	if got, _ := n.cgPop("u", "p0", "consumerGroup", "g", "batch", "10"); !slices.Equal(got, []string{"a2"}) {
		t.Fatalf("p0's cursor stays: %v", got)
	}
	if g := n.cgList()["g/u"]; g.SubscriptionMode == nil || *g.SubscriptionMode != "timestamp" || g.SubscriptionTimestamp == nil {
		t.Fatalf("listed as %+v", g)
	}
	for body, want := range map[string]string{
		`{}`:                                  "Missing subscriptionTimestamp in request body",
		`{"subscriptionTimestamp":"monday"}`:  "subscriptionTimestamp must be an RFC 3339 time",
		`{"subscriptionTimestamp":12}`:        "subscription body",
		`{"subscriptionTimestamp":"2026-13"}`: "subscriptionTimestamp",
	} {
		if status, out := n.call("POST", cgPath("g", "subscription"), []byte(body)); status != http.StatusBadRequest || !strings.Contains(string(out), want) {
			t.Errorf("%s: %d %s", body, status, out)
		}
	}
}

// Another tenant's groups read as unknown and its changes touch nothing of
// this tenant; deletes take admin tokens (403 for a tenant token).
func TestConsumerGroupsTenantsAndRights(t *testing.T) {
	a, b := tenancy.TenantID(uuid.New()), tenancy.TenantID(uuid.New())
	n := newNode(t, nodeOpts{tokens: map[string]tenancy.TenantID{"tok-a": a, "tok-b": b},
		admins: map[string]tenancy.TenantID{"adm-a": a, "adm-b": b}})
	as := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
	if status, out := n.post("/api/v1/push", []byte(items(item("q", "p", "m1"), item("q", "p", "m2"))), as("tok-a")...); status != http.StatusCreated {
		t.Fatalf("push: %d %s", status, out)
	}
	if status, out := n.get("/api/v1/pop/queue/q/partition/p?consumerGroup=g&batch=10", as("tok-a")...); status != http.StatusOK {
		t.Fatalf("pop: %d %s", status, out)
	}
	cursor := func() int64 {
		return n.count(`SELECT count(*) FROM queen.consumer_cursors WHERE consumer_group = 'g'`)
	}

	var list []cgSummary
	if n.cgOK("GET", "/api/v1/consumer-groups", "", &list, as("tok-b")...); len(list) != 0 {
		t.Fatalf("b lists %+v", list)
	}
	if n.cgOK("GET", "/api/v1/consumer-groups", "", &list, as("tok-a")...); len(list) != 1 || list[0].Name != "g" {
		t.Fatalf("a lists %+v", list)
	}
	var detail map[string]any
	if n.cgOK("GET", cgPath("g"), "", &detail, as("tok-b")...); len(detail) != 0 {
		t.Fatalf("b reads %v", detail)
	}
	var s cgSeekAnswer
	if n.cgOK("POST", cgPath("g", "queues", "q", "seek"), `{"toEnd":true}`, &s, as("tok-b")...); s.PartitionsUpdated != 0 {
		t.Fatalf("b seeks %+v", s)
	}
	if status, _ := n.call("POST", cgPath("g", "queues", "q", "partitions", "p", "seek"), nil, as("tok-b")...); status != http.StatusNotFound {
		t.Fatalf("b seeks a's partition: %d", status)
	}
	var sub struct {
		RowsUpdated int64 `json:"rowsUpdated"`
	}
	if n.cgOK("POST", cgPath("g", "subscription"), `{"subscriptionTimestamp":"2030-01-01T00:00:00Z"}`, &sub, as("tok-b")...); sub.RowsUpdated != 0 {
		t.Fatalf("b updates a's subscription: %+v", sub)
	}
	var d cgDeleteAnswer
	if n.cgOK("DELETE", cgPath("g"), "", &d, as("adm-b")...); d.DeletedPartitions != 0 || cursor() != 1 {
		t.Fatalf("b's admin deletes %+v, %d cursors left", d, cursor())
	}
	if n.cgOK("DELETE", cgPath("g", "queues", "q"), "", &d, as("adm-b")...); d.DeletedPartitions != 0 || cursor() != 1 {
		t.Fatalf("b's admin deletes on q %+v, %d cursors left", d, cursor())
	}
	for _, path := range []string{cgPath("g"), cgPath("g", "queues", "q")} {
		if status, out := n.call("DELETE", path, nil, as("tok-a")...); status != http.StatusForbidden || cursor() != 1 {
			t.Fatalf("a tenant token deleting %s: %d %s", path, status, out)
		}
		if status, _ := n.call("DELETE", path, nil); status != http.StatusUnauthorized {
			t.Fatalf("no token deleting %s: %d", path, status)
		}
	}
	// A's own seeks and deletes with a's tokens.
	if n.cgOK("POST", cgPath("g", "queues", "q", "seek"), `{"timestamp":"2000-01-01T00:00:00Z"}`, &s, as("tok-a")...); s.PartitionsUpdated != 1 {
		t.Fatalf("a seeks %+v", s)
	}
	if n.cgOK("DELETE", cgPath("g"), "", &d, as("adm-a")...); d.DeletedPartitions != 1 || cursor() != 0 {
		t.Fatalf("a's admin deletes %+v", d)
	}
}
