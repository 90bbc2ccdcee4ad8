package jetstream

import (
	"testing"
	"time"
)

// The bodies the clients send (captured from nats.go v1.55.0 and the nats
// CLI v0.5.0) and those nats-server accepts in other shapes.
func TestParsePullRequestClientShapes(t *testing.T) {
	cases := []struct {
		who, body string
		want      PullRequest
	}{
		{"Fetch(3, FetchMaxWait(2s))", `{"expires":2000000000,"batch":3}`, PullRequest{Batch: 3, Expires: 2 * time.Second}},
		{"FetchNoWait(10)", `{"batch":10,"no_wait":true}`, PullRequest{Batch: 10, NoWait: true}},
		{"Next()", `{"expires":30000000000,"batch":1,"idle_heartbeat":5000000000}`, PullRequest{Batch: 1, Expires: 30 * time.Second, Heartbeat: 5 * time.Second}},
		{"Consume()", `{"expires":30000000000,"batch":500,"idle_heartbeat":15000000000}`, PullRequest{Batch: 500, Expires: 30 * time.Second, Heartbeat: 15 * time.Second}},
		{"Consume(PullMaxBytes)", `{"expires":30000000000,"batch":1000000,"max_bytes":1048576,"idle_heartbeat":15000000000}`, PullRequest{Batch: 1000000, Expires: 30 * time.Second, MaxBytes: 1 << 20, Heartbeat: 15 * time.Second}},
		{"nats consumer next", `{"expires":5000000000,"batch":1}`, PullRequest{Batch: 1, Expires: 5 * time.Second}},
		{"legacy: a bare batch", "7", PullRequest{Batch: 7}},
		{"legacy: nothing", "", PullRequest{Batch: 1}},
		{"white space", " \r\n", PullRequest{Batch: 1}},
		{"batch 0 is 1", `{"batch":0,"expires":1000}`, PullRequest{Batch: 1, Expires: 1000}},
		{"unknown fields are ignored, as by nats-server", `{"batch":2,"future":true}`, PullRequest{Batch: 2}},
	}
	for _, c := range cases {
		got, err := ParsePullRequest([]byte(c.body))
		if err != nil || got != c.want {
			t.Errorf("%s: ParsePullRequest(%s) = %+v, %v; want %+v", c.who, c.body, got, err, c.want)
		}
	}
}

// Refusals carry nats-server's words after "Bad Request - " where it has
// them.
func TestParsePullRequestRefuses(t *testing.T) {
	cases := []struct{ body, want string }{
		{`{"batch":1,"expires":1000000000,"idle_heartbeat":600000000}`, "heartbeat value too large"},
		{`{"batch":1,"idle_heartbeat":1000000000}`, "heartbeat value too large"},
		{`{"batch":1,"min_pending":10}`, "Not a Overflow Priority consumer"},
		{`{"batch":1,"min_ack_pending":10}`, "Not a Overflow Priority consumer"},
		{`{"batch":1,"id":"pin"}`, "Not a Pinned Client Priority consumer"},
		{`{"batch":1,"priority":12}`, "Priority must be between 0 and 9"},
		{`{"batch":1,"group":"jobs"}`, "Invalid Priority Group"},
		{`{"batch":1,"priority":3}`, "Invalid Priority Group"},
		{`{"batch":-1}`, "batch must not be negative"},
		{`{"batch":1,"expires":-5}`, "expires must not be negative"},
		{`{"batch":1,"max_bytes":-5}`, "max_bytes must not be negative"},
		{`-3`, "batch must not be negative"},
		{`{"batch":"ten"}`, "json: cannot unmarshal string into Go struct field pullRequestJSON.batch of type int"},
		{`{"batch":1`, "unexpected end of JSON input"},
		{`next please`, `pull request "next please" is neither a JSON object, a batch size nor empty`},
	}
	for _, c := range cases {
		_, err := ParsePullRequest([]byte(c.body))
		if err == nil || err.Error() != c.want {
			t.Errorf("ParsePullRequest(%s) = %v; want %q", c.body, err, c.want)
		}
	}
}
