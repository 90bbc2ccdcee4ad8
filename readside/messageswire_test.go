package readside

import (
	"encoding/json"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/jsonapi"
	"net/url"
	"reflect"
	"testing"
	"time"
)

// Queen's message routes: which GET /api/v1/messages is the list, the list
// form's query, and the answers as JSON.

func TestIsMessageList(t *testing.T) {
	t.Parallel()
	for q, want := range map[string]bool{
		"queue=q":                             false,
		"queue=q&partition=p&from=3&limit=10": false,
		"queue=q&waitMs=100&maxBytes=10":      false,
		"queue=q&from=":                       false, // as if left out
		"":                                    true,
		"partition=p":                         true,
		"queue=":                              true,
		"queue=q&from=2026-01-01T00:00:00Z":   true,
		"queue=q&to=2026-01-01T00:00:00Z":     true,
		"queue=q&ns=n":                        true,
		"queue=q&namespace=n":                 true,
		"queue=q&task=t":                      true,
		"queue=q&status=pending":              true,
		"queue=q&offset=0":                    true,
		"queue=q&offset=":                     true,
		"ns=n&from=2026-01-01T00:00:00.5%2B02:00": true,
	} {
		v, err := url.ParseQuery(q)
		if err != nil {
			t.Fatal(err)
		}
		if got := IsMessageList(v); got != want {
			t.Errorf("%q: list form %v, want %v", q, got, want)
		}
	}
}

func TestParseMessageListQuery(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 10, 30, 15, 0, time.UTC)
	for _, c := range []struct {
		query string
		want  MessageListRequest
		err   string
	}{
		{query: "", want: MessageListRequest{From: now.Add(-time.Hour), To: time.Date(2026, 12, 2, 10, 31, 0, 0, time.UTC), Limit: 200}},
		{query: "queue=q&partition=p&ns=n&namespace=x&task=t&status=dead_letter&from=2026-12-01T00:00:00Z&to=2026-12-01T01:00:00Z&limit=5&offset=10",
			want: MessageListRequest{Queue: "q", Partition: "p", Namespace: "n", Task: "t", Status: "dead_letter",
				From: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC), Limit: 5, Offset: 10}},
		{query: "to=2026-12-01T01:00:00.001Z", want: MessageListRequest{From: now.Add(-time.Hour), To: time.Date(2026, 12, 1, 1, 1, 0, 0, time.UTC), Limit: 200}},
		{query: "status=done", err: `status must be pending, processing, completed or dead_letter, got "done"`},
		{query: "from=yesterday", err: `from must be an RFC 3339 time, got "yesterday"`},
		{query: "limit=0", err: "limit must be 1..1000 and offset 0..100000, got 0 and 0"},
		{query: "limit=1001", err: "limit must be 1..1000 and offset 0..100000, got 1001 and 0"},
		{query: "offset=-1", err: "limit must be 1..1000 and offset 0..100000, got 200 and -1"},
		{query: "offset=x", err: `offset must be an integer, got "x"`},
	} {
		v, _ := url.ParseQuery(c.query)
		got, err := ParseMessageListQuery(v, now)
		testkit.WantError[*jsonapi.BadRequest](t, err, c.err)
		if c.err == "" && !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %+v, want %+v", c.query, got, c.want)
		}
	}
}

func TestMessageAnswers(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	h := MessageHead{ID: [16]byte{1}, TransactionID: "t\"1", PartitionID: 7, Queue: "a.b", Partition: "p", Namespace: "a", Task: "b",
		Status: MessageProcessing, QueueStatus: MessageProcessing, CreatedAt: at, LeaseExpires: at.Add(time.Minute), TotalGroups: 2, ConsumedBy: 1,
		Priority: []byte(`"high"`), Payload: []byte(`{"x":[1]}`), Encoded: true, HasDeadLetter: true, ErrorMessage: "boom", RetryCount: 2,
		LeaseTime: []byte(`60`), Mode: MessageMode{HasQueueMode: true, BusGroups: 2},
		Groups: []GroupConsumed{{Name: "__QUEUE_MODE__"}, {Name: "g", Consumed: true, LeaseExpires: at}}}
	var list map[string]any
	out := AppendMessageList(nil, []MessageHead{h, h}, MessageMode{BusGroups: 1})
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	m := list["messages"].([]any)[0].(map[string]any)
	if m["transactionId"] != "t\"1" || m["partitionId"] != "7" || m["queuePath"] != "a.b/p" || m["queuePriority"] != 0.0 ||
		m["traceId"] != nil || m["producerSub"] != nil || m["leaseExpiresAt"] != "2026-12-02T10:01:00Z" || m["payload"] != nil ||
		m["busStatus"].(map[string]any)["consumedBy"] != 1.0 || len(list["messages"].([]any)) != 2 ||
		!reflect.DeepEqual(list["mode"], map[string]any{"hasQueueMode": false, "busGroupsCount": 1.0, "type": "bus"}) {
		t.Fatalf("list: %s", out)
	}
	var d map[string]any
	out = AppendMessageDetail(nil, &h)
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if d["encoding"] != "base64" || d["errorMessage"] != "boom" || d["retryCount"] != 2.0 || d["isEncrypted"] != false ||
		!reflect.DeepEqual(d["payload"], map[string]any{"x": []any{1.0}}) ||
		!reflect.DeepEqual(d["queueConfig"], map[string]any{"leaseTime": 60.0, "retryLimit": 3.0, "retryDelay": 1000.0, "ttl": 3600.0, "priority": 0.0}) ||
		!reflect.DeepEqual(d["mode"], map[string]any{"hasQueueMode": true, "busGroupsCount": 2.0, "consumedByGroups": 1.0, "type": "hybrid"}) ||
		len(d["consumerGroups"].([]any)) != 2 || d["consumerGroups"].([]any)[0].(map[string]any)["leaseExpiresAt"] != nil {
		t.Fatalf("detail: %s", out)
	}
	if got := string(AppendMessageDeleted(nil, false, "x", "y")); got != `{"success":false,"partitionId":"x","transactionId":"y","message":"Message not found"}` {
		t.Fatalf("delete: %s", got)
	}
}
