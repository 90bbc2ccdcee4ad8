package bridge_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testkit"
)

// Queen's retention suite, without its 15 s wait: a queue configured with
// retentionEnabled and maxWaitTimeSeconds 10 gets 100 messages; once they
// are 15 s old (aged in the database) the retention ticks evict them and a
// pop, of the queue or of any group, gets none, also through this
// bridge's hot tail. A configure with a bad value is refused, naming it, and writes
// nothing.
func TestMaxWaitTimeEvictsUnconsumedMessages(t *testing.T) {
	n := newNode(t, nodeOpts{retain: 50 * time.Millisecond})
	for body, want := range map[string]string{
		`{"queue":"bad","options":{"retentionEnabled":true,"maxWaitTimeSeconds":-5}}`: "options.maxWaitTimeSeconds must be a whole number of seconds",
		`{"queue":"bad","options":{"retentionEnabled":"yes","maxWaitTimeSeconds":5}}`: "options.retentionEnabled must be true or false",
	} {
		if status, out := n.post("/api/v1/configure", []byte(body)); status != http.StatusBadRequest || !strings.Contains(string(out), want) {
			t.Errorf("configure %s: %d %s, want 400 naming %q", body, status, out, want)
		}
	}
	if c := n.count(`SELECT count(*) FROM queen.queues WHERE name = 'bad'`); c != 0 {
		t.Fatalf("a refused configure wrote %d queue rows", c)
	}
	status, out := n.post("/api/v1/configure", []byte(`{"queue":"evict","options":{"retentionEnabled":true,"maxWaitTimeSeconds":10}}`))
	if status != http.StatusOK || !strings.Contains(string(out), `"notActedOn":[]`) {
		t.Fatalf("configure: %d %s", status, out)
	}
	// A pop first, so that this bridge's hot tail keeps what is pushed
	// next: the pops after eviction try it before the database.
	if status, _ := n.popHTTP("evict", "", "consumerGroup", "early", "wait", "false"); status != http.StatusNoContent {
		t.Fatalf("a pop of the empty queue: %d", status)
	}
	var its []string
	for k := 0; k < 100; k++ {
		its = append(its, item("evict", "", fmt.Sprint("m", k)))
	}
	n.pushHTTP(items(its...))
	if status, p := n.popHTTP("evict", "", "consumerGroup", "early", "batch", "1", "autoAck", "true", "wait", "false"); status != http.StatusOK || len(p.Messages) != 1 {
		t.Fatalf("a pop before eviction: %d %+v", status, p)
	}
	if c := n.count(`WITH aged AS (UPDATE queen.log_segments SET created_at = created_at - interval '15 seconds' RETURNING 1)
		SELECT count(*) FROM aged`); c == 0 {
		t.Fatal("no segment to age")
	}
	testkit.WaitFor(t, "retention to evict the messages", time.Minute, func() bool {
		return n.count(`SELECT count(*) FROM queen.log_segments`) == 0
	})
	for _, group := range []string{"", "early", "late"} {
		params := []string{"batch", "100", "wait", "false"}
		if group != "" {
			params = append(params, "consumerGroup", group)
		}
		if status, p := n.popHTTP("evict", "", params...); status != http.StatusNoContent {
			t.Errorf("group %q pops %d messages after eviction", group, len(p.Messages))
		}
	}
}
