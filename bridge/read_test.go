package bridge_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/internal/testenv"
)

type readAnswer struct {
	Messages []struct {
		Offset        int64           `json:"offset"`
		MessageID     string          `json:"messageId"`
		TransactionID string          `json:"transactionId"`
		TraceID       string          `json:"traceId"`
		Payload       json.RawMessage `json:"payload"`
		CreatedAt     string          `json:"createdAt"`
	} `json:"messages"`
	Next int64 `json:"next"`
}

func (n *node) read(query string) readAnswer {
	n.t.Helper()
	status, out := n.get("/api/v1/messages?" + query)
	if status != http.StatusOK {
		n.t.Fatalf("read %s: %d %s", query, status, out)
	}
	var a readAnswer
	if err := json.Unmarshal(out, &a); err != nil {
		n.t.Fatalf("read %s: %s: %v", query, out, err)
	}
	return a
}

// 1,000 messages over several partitions and two queues, one encrypted:
// read back exactly as pushed, in offset order.
func TestReadBackExactlyWhatWasPushed(t *testing.T) {
	n := newNode(t, nodeOpts{keys: testKeys})
	if status, out := n.post("/api/v1/configure", []byte(`{"queue":"sealed","options":{"encryptionEnabled":true}}`)); status != http.StatusOK {
		t.Fatalf("configure: %d %s", status, out)
	}
	type sent struct{ tx, payload, trace string }
	want := map[string][]sent{}
	for r := 0; r < 10; r++ {
		var parts []string
		for i := 0; i < 100; i++ {
			q := []string{"plain", "sealed"}[i%2]
			key := fmt.Sprintf("%s/p%d", q, i%4)
			payload := fmt.Sprintf(`{"r": %d, "i":%d ,"s":"caf\u00e9 %d"}`, r, i, r*100+i)
			tx := fmt.Sprintf("tx-%d-%d", r, i)
			parts = append(parts, fmt.Sprintf(`{"queue":%q,"partition":"p%d","transactionId":%q,"traceId":"tr%d","payload":%s}`, q, i%4, tx, i, payload))
			want[key] = append(want[key], sent{tx, payload, fmt.Sprintf("tr%d", i)})
		}
		n.pushHTTP(items(parts...))
	}
	total := 0
	for key, exp := range want {
		q, p, _ := strings.Cut(key, "/")
		a := n.read("queue=" + q + "&partition=" + p + "&limit=1000")
		if len(a.Messages) != len(exp) || a.Next != int64(len(exp))+1 {
			t.Fatalf("%s: %d messages, next %d; want %d", key, len(a.Messages), a.Next, len(exp))
		}
		for i, m := range a.Messages {
			if m.Offset != int64(i+1) || m.TransactionID != exp[i].tx || m.TraceID != exp[i].trace || !bytes.Equal(m.Payload, []byte(exp[i].payload)) {
				t.Fatalf("%s message %d: %+v, want %+v", key, i, m, exp[i])
			}
		}
		total += len(a.Messages)
	}
	if total != 1000 {
		t.Fatalf("read %d messages", total)
	}
	// from, limit and next page through a partition
	a := n.read("queue=plain&partition=p0&from=10&limit=5")
	if len(a.Messages) != 5 || a.Messages[0].Offset != 10 || a.Next != 15 {
		t.Fatalf("page: %d messages from %d, next %d", len(a.Messages), a.Messages[0].Offset, a.Next)
	}
	// bad reads (without queue, or with a from that is not an offset, the
	// query is Queen's message list, docs/admin-messages.md, and its from a time)
	for q, want := range map[string]string{"queue=plain&limit=5000": "limit must be", "queue=plain&from=x": "from must be an RFC 3339 time"} {
		if status, out := n.get("/api/v1/messages?" + q); status != http.StatusBadRequest || !strings.Contains(string(out), want) {
			t.Errorf("%q: %d %s", q, status, out)
		}
	}
	// the same read over NATS
	reply, err := n.nc.Request(n.prefix+".v1.fetch", []byte(`{"queue":"sealed","partition":"p1","from":3,"limit":2}`), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var na readAnswer
	if err := json.Unmarshal(reply.Data, &na); err != nil || len(na.Messages) != 2 || na.Messages[0].TransactionID != want["sealed/p1"][2].tx {
		t.Fatalf("NATS fetch: %s %v", reply.Data, err)
	}
	// a wait that would overflow when turned into a duration is refused
	reply, err = n.nc.Request(n.prefix+".v1.fetch", []byte(`{"queue":"sealed","partition":"p1","from":3,"waitMs":9223372036855}`), 5*time.Second)
	if err != nil || reply.Header.Get("Nats-Service-Error-Code") != "400" || !strings.Contains(string(reply.Data), "waitMs must be") {
		t.Fatalf("NATS fetch with an overflowing waitMs: %v %v %s", err, reply.Header, reply.Data)
	}
}

// A read parked on bridge B returns the message pushed through bridge A, woken
// (not timed out: the wait is 10 s) by A's announcement; with the hot-list on
// and off. The latency is printed.
func TestParkedReadOnPeerIsWoken(t *testing.T) {
	for _, noHot := range []bool{false, true} {
		t.Run(fmt.Sprintf("hotlist=%v", !noHot), func(t *testing.T) {
			a := newNode(t, nodeOpts{noHot: noHot})
			b := newNode(t, nodeOpts{noHot: noHot, dsn: a.db.Pool().Config().ConnConfig.ConnString(), prefix: a.prefix})
			var lat []time.Duration
			for i := 0; i < 20; i++ {
				got := make(chan readAnswer, 1)
				before := metricValue(t, b, "queen_parked_reads")
				go func() { got <- b.read(fmt.Sprintf("queue=wake&partition=p&from=%d&waitMs=10000", i+1)) }()
				waitUntil(t, "the read to park", 10*time.Second, func() bool { return metricValue(t, b, "queen_parked_reads") > before })
				a.pushHTTP(items(item("wake", "p", fmt.Sprint(i))))
				answered := time.Now()
				r := <-got
				lat = append(lat, time.Since(answered))
				if len(r.Messages) != 1 || r.Messages[0].TransactionID != fmt.Sprint(i) {
					t.Fatalf("try %d: the parked read returned %+v", i, r)
				}
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			t.Logf("push answered by A -> parked read on B returned: median %s (min %s, max %s) over %d tries",
				lat[len(lat)/2].Round(100*time.Microsecond), lat[0].Round(100*time.Microsecond), lat[len(lat)-1].Round(100*time.Microsecond), len(lat))
		})
	}
}

// 1,000 pushes per second to one partition with 50 parked readers: wakes are
// coalesced to at most one per 5 ms tick, and every reader sees every message.
func TestHotPartitionWakesAreCoalesced(t *testing.T) {
	n := newNode(t, nodeOpts{})
	const readers, pushes = 50, 1500
	var wg sync.WaitGroup
	seen := make([]int, readers)
	for r := 0; r < readers; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			next := int64(1)
			for next <= pushes {
				a := n.read(fmt.Sprintf("queue=hot&partition=p&from=%d&limit=1000&waitMs=5000", next))
				for _, m := range a.Messages {
					if m.Offset != next {
						t.Errorf("reader %d: offset %d, want %d", r, m.Offset, next)
						return
					}
					next++
					seen[r]++
				}
			}
		}(r)
	}
	waitUntil(t, "readers to park", 30*time.Second, func() bool { return metricValue(t, n, "queen_parked_reads") >= readers })
	wakesBefore := metricValue(t, n, "queen_hotlist_wakes_total")
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	var pw sync.WaitGroup
	jobs := make(chan int, pushes)
	for w := 0; w < 32; w++ {
		pw.Add(1)
		go func() {
			defer pw.Done()
			for i := range jobs {
				n.pushHTTP(items(item("hot", "p", fmt.Sprint(i))))
			}
		}()
	}
	for i := 0; i < pushes; i++ {
		<-tick.C // pace: one push per millisecond
		jobs <- i
	}
	close(jobs)
	pw.Wait()
	tick.Stop()
	elapsed := time.Since(start)
	wakes := metricValue(t, n, "queen_hotlist_wakes_total") - wakesBefore
	wg.Wait()
	for r, c := range seen {
		if c != pushes {
			t.Fatalf("reader %d saw %d of %d messages", r, c, pushes)
		}
	}
	perSecond := wakes / elapsed.Seconds()
	t.Logf("%d pushes in %s (%.0f/s), %d parked readers: %.0f wakes (%.0f per second)", pushes, elapsed.Round(time.Millisecond),
		float64(pushes)/elapsed.Seconds(), readers, wakes, perSecond)
	if limit := elapsed.Seconds()*1000/5 + 2; wakes > limit {
		t.Fatalf("%.0f wakes in %s: more than one per 5 ms tick (%.0f)", wakes, elapsed, limit)
	}
}

// MESSAGE_AVAILABLE on <prefix>.v1.available: the origin bridge and the
// partitions a push wrote to.
func TestMessageAvailableFormat(t *testing.T) {
	n := newNode(t, nodeOpts{})
	sub, err := n.nc.SubscribeSync(n.prefix + ".v1.available")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	n.pushHTTP(items(item("avail.q", "p1", "a"), item("avail.q", "p2", "b"), item("avail.q", "p1", "c")))
	// The publisher batches what was marked since its last message: the two
	// partitions may come in one message or two.
	parts := map[string]bool{}
	for len(parts) < 2 {
		msg, err := sub.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("after %v: %v", parts, err)
		}
		var m struct {
			Origin string
			Items  []struct{ Tenant, Queue, Partition string }
		}
		if err := json.Unmarshal(msg.Data, &m); err != nil {
			t.Fatal(err)
		}
		if m.Origin != n.br.ID() || len(m.Items) == 0 {
			t.Fatalf("MESSAGE_AVAILABLE %s (bridge %s)", msg.Data, n.br.ID())
		}
		for _, it := range m.Items {
			if it.Tenant != "00000000-0000-0000-0000-000000000000" || it.Queue != "avail.q" || parts[it.Partition] {
				t.Fatalf("item %+v (seen %v)", it, parts)
			}
			parts[it.Partition] = true
		}
	}
	if !parts["p1"] || !parts["p2"] {
		t.Fatalf("announced %v", parts)
	}
}

// A flood of announcements for a partition (from anyone on NATS) costs
// each parked read a few queries a second, not one per announcement; a real
// push still answers them.
func TestAnnouncementFloodIsBoundedPerParkedRead(t *testing.T) {
	n := newNode(t, nodeOpts{})
	n.pushHTTP(items(item("flood", "p", "first"))) // offset 1: the reads wait from 2
	const reads = 10
	answers := make(chan readAnswer, reads)
	for i := 0; i < reads; i++ {
		go func() { answers <- n.read("queue=flood&partition=p&from=2&waitMs=20000") }()
	}
	waitUntil(t, "the reads to park", 10*time.Second, func() bool { return metricValue(t, n, "queen_parked_reads") == reads })
	before := metricValue(t, n, "queen_read_queries_total")
	intruder, err := nats.Connect(testenv.NATSURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer intruder.Close()
	announce := []byte(`{"origin":"intruder","items":[{"tenant":"00000000-0000-0000-0000-000000000000","queue":"flood","partition":"p"}]}`)
	const flood = 2 * time.Second
	for end := time.Now().Add(flood); time.Now().Before(end); {
		if err := intruder.Publish(n.prefix+".v1.available", announce); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Microsecond) // paces the flood at about 5,000 a second
	}
	if err := intruder.Flush(); err != nil {
		t.Fatal(err)
	}
	heard := metricValue(t, n, "queen_available_received_total")
	queries := metricValue(t, n, "queen_read_queries_total") - before
	// Without the pause after an empty wake every 5 ms hot-list tick costs
	// each read a query: about 400 per read in 2 s.
	if heard < 1000 || queries > reads*30 {
		t.Fatalf("%.0f announcements heard, %.0f queries by %d parked reads (at most %d allowed)", heard, queries, reads, reads*30)
	}
	n.pushHTTP(items(item("flood", "p", "second")))
	for i := 0; i < reads; i++ {
		if a := <-answers; len(a.Messages) != 1 || a.Messages[0].TransactionID != "second" {
			t.Fatalf("parked read answered %+v", a)
		}
	}
}
