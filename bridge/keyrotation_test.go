package bridge_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// rotationLog is what a key rotation's consumers saw: every transactionId
// pushed with its payload, how often each was delivered, and acknowledged.
type rotationLog struct {
	t         *testing.T
	pushed    map[string]string // transactionId -> payload
	delivered map[string]int
	acked     map[string]int
	refused   map[string]int // answers that delivered nothing, by "<bridge> <status>"
}

// push sends one item per partition through n, each its own payload.
func (l *rotationLog) push(n *node, name string, round int) {
	l.t.Helper()
	var its []string
	for p := 0; p < 3; p++ {
		tx := fmt.Sprintf("%s-r%d-p%d", name, round, p)
		payload := fmt.Sprintf(`{"tx":%q}`, tx)
		its = append(its, fmt.Sprintf(`{"queue":"rot","partition":"p%d","transactionId":%q,"payload":%s}`, p, tx, payload))
		l.pushed[tx] = payload
	}
	for _, r := range n.pushHTTP(items(its...)) {
		if r.Status != "queued" {
			l.t.Fatalf("push through %s: %+v", name, r)
		}
	}
}

// pop pops any partition of the queue through n (auto-ack or under a
// lease, then acknowledged), records what it delivered, and answers the
// status. A pop that delivers nothing must say why when it is not 204: a
// missing key, by key id.
func (l *rotationLog) pop(n *node, name string, autoAck bool) int {
	l.t.Helper()
	q := url.Values{"batch": {"4"}, "partitions": {"2"}, "autoAck": {fmt.Sprint(autoAck)}}
	status, out := n.get("/api/v1/pop/queue/rot?" + q.Encode())
	switch status {
	case http.StatusOK:
	case http.StatusNoContent:
		return status
	case http.StatusServiceUnavailable, http.StatusInternalServerError:
		if !bytes.Contains(out, []byte("key id 2")) && !bytes.Contains(out, []byte("key id that is not configured (2)")) {
			l.t.Fatalf("pop through %s: %d %s; want it to name key id 2", name, status, out)
		}
		l.refused[fmt.Sprint(name, " ", status)]++
		return status
	default:
		l.t.Fatalf("pop through %s: %d %s", name, status, out)
	}
	var p popped
	if err := json.Unmarshal(out, &p); err != nil {
		l.t.Fatalf("pop answer %s: %v", out, err)
	}
	for _, m := range p.Messages {
		l.delivered[m.TransactionID]++
		if want := l.pushed[m.TransactionID]; string(m.Data) != want {
			l.t.Errorf("%s delivered %s as %s, pushed %s", name, m.TransactionID, m.Data, want)
		}
		if autoAck {
			l.acked[m.TransactionID]++
		}
	}
	if !autoAck {
		for i, a := range n.ackAll(p, "", nil) {
			if !a.Success {
				l.t.Fatalf("ack of %s through %s: %+v", p.Messages[i].TransactionID, name, a)
			}
			l.acked[a.TransactionID]++
		}
	}
	return status
}

// The rolling key rotation of docs/security.md, end to end on two bridges
// of one database: key 2 is added to one bridge first (restarted with keys
// 1 and 2) while the other still has key 1 only, then to the other.
// Pushes and pops go through both bridges all along. The bridge without
// key 2 delivers what key 1 sealed until it learns the queue's key id,
// then refuses pops by key id before claiming anything; what it claimed
// and could not open goes back in the same request. At the end every
// message pushed was delivered and acknowledged exactly once, and no
// partition is left leased.
func TestRollingKeyRotationLosesNothing(t *testing.T) {
	key1, key2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	old, both := map[uint8][]byte{1: key1}, map[uint8][]byte{1: key1, 2: key2}
	a := newNode(t, nodeOpts{keys: old})
	dsn := a.db.Pool().Config().ConnConfig.ConnString()
	b := newNode(t, nodeOpts{keys: old, dsn: dsn, prefix: a.prefix})
	a.configureQueue("rot", `{"encryptionEnabled":true}`)
	l := &rotationLog{t: t, pushed: map[string]string{}, delivered: map[string]int{}, acked: map[string]int{}, refused: map[string]int{}}

	for r := 0; r < 3; r++ { // before: both bridges hold key 1
		l.push(a, "a", r)
		l.push(b, "b", r)
		l.pop(a, "a", r%2 == 0)
		l.pop(b, "b", r%2 == 1)
	}

	a.stop() // the first bridge restarts with key 2 added
	a2 := newNode(t, nodeOpts{keys: both, dsn: dsn, prefix: a.prefix})
	for r := 0; r < 3; r++ {
		l.push(a2, "a2", r) // sealed under key 2
		l.push(b, "b", 10+r)
		l.pop(b, "b", r%2 == 0) // delivers, or is refused naming key id 2
		l.pop(a2, "a2", r%2 == 1)
	}
	if leased := a2.count(`SELECT count(*) FROM queen.consumer_cursors WHERE lease_id IS NOT NULL AND lease_expires_at > now()`); leased != 0 {
		t.Fatalf("%d partitions leased while the rotation is half done (refusals %v)", leased, l.refused)
	}
	// Within its settings cache's lifetime the bridge without key 2 learns
	// the queue's key id, and refuses before claiming.
	waitUntil(t, "the bridge without key 2 to refuse the queue's pops", 30*time.Second, func() bool {
		l.push(a2, "a2", 100+len(l.pushed))
		return l.pop(b, "b", false) == http.StatusServiceUnavailable && l.pop(b, "b", true) == http.StatusServiceUnavailable
	})
	if leased := a2.count(`SELECT count(*) FROM queen.consumer_cursors WHERE lease_id IS NOT NULL AND lease_expires_at > now()`); leased != 0 {
		t.Fatalf("%d partitions leased after pops through the bridge without key 2", leased)
	}

	b.stop() // the second bridge restarts with key 2 added
	b2 := newNode(t, nodeOpts{keys: both, dsn: dsn, prefix: a.prefix})
	for r := 0; r < 3; r++ {
		l.push(b2, "b2", r)
		l.push(a2, "a2", 20+r)
		l.pop(b2, "b2", r%2 == 0)
		l.pop(a2, "a2", r%2 == 1)
	}
	for empty := 0; empty < 2; { // both bridges pop until neither has anything
		empty = 0
		for i, n := range []*node{a2, b2} {
			if l.pop(n, []string{"a2", "b2"}[i], i == 0) == http.StatusNoContent {
				empty++
			}
		}
	}

	var lost, twice []string
	for tx := range l.pushed {
		if l.delivered[tx] != 1 || l.acked[tx] != 1 {
			if l.delivered[tx] == 0 {
				lost = append(lost, tx)
			} else {
				twice = append(twice, fmt.Sprintf("%s delivered %d, acknowledged %d", tx, l.delivered[tx], l.acked[tx]))
			}
		}
	}
	if len(lost) > 0 || len(twice) > 0 || len(l.delivered) != len(l.pushed) {
		t.Fatalf("%d pushed, %d delivered; never delivered: %v; not exactly once: %v", len(l.pushed), len(l.delivered), lost, twice)
	}
	if leased := a2.count(`SELECT count(*) FROM queen.consumer_cursors WHERE lease_id IS NOT NULL`); leased != 0 {
		t.Fatalf("%d partitions left leased", leased)
	}
	if behind := a2.count(`SELECT count(*) FROM queen.log_partitions p JOIN queen.consumer_cursors c ON c.partition_id = p.id
		WHERE c.cursor_offset <> p.last_offset`); behind != 0 {
		t.Fatalf("%d cursors short of their partition's end", behind)
	}
	if l.refused["b 503"] == 0 {
		t.Fatalf("the bridge without key 2 never refused before claiming: %v", l.refused)
	}
	t.Logf("refusals while the rotation was half done: %v", l.refused)
}
