package admin

import (
	"encoding/json"
	"github.com/queenbridge/queenbridge/jsonapi"
	"net/url"
	"testing"
	"time"
)

// The resource and status answers render Queen's field names, in the
// wire's order, timestamps in UTC and null when unknown, and the lists as
// [] when empty.
func TestAdminAnswersGolden(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 29, 23, 41, 7, 123456000, time.FixedZone("CET", 3600))
	golden(t, jsonapi.AppendResource(nil, QueueList{Queues: []QueueSummary{{ID: "7", Name: "orders.eu", Namespace: "orders", Task: "eu", CreatedAt: StatTime(at),
		Partitions: 2, Messages: ThreeCounts{Total: 4, Pending: 2, Processing: 1}}}}),
		`{"queues":[{"id":"7","name":"orders.eu","namespace":"orders","task":"eu","createdAt":"2026-11-29T22:41:07.123456Z","partitions":2,"messages":{"total":4,"pending":2,"processing":1}}]}`)
	golden(t, jsonapi.AppendResource(nil, QueueDetail{ID: "7", Name: "q", Partitions: []PartitionDetail{{ID: "17", Name: "p", Stats: SixCounts{Total: 1, Pending: 1}}}}),
		`{"id":"7","name":"q","namespace":"","task":"","createdAt":null,"partitions":[{"id":"17","name":"p","createdAt":null,`+
			`"stats":{"total":1,"pending":1,"processing":0,"completed":0,"failed":0,"deadLetter":0},"oldestMessage":null,"newestMessage":null}],`+
			`"totals":{"total":0,"pending":0,"processing":0,"completed":0,"failed":0,"deadLetter":0}}`)
	golden(t, jsonapi.AppendResource(nil, QueueDeleted{Deleted: true, Queue: "q", Existed: true}), `{"deleted":true,"queue":"q","existed":true}`)
	golden(t, jsonapi.AppendResource(nil, StatusTotals{Messages: SixCounts{Total: 2}, SixCounts: SixCounts{Total: 2}}),
		`{"messages":{"total":2,"pending":0,"processing":0,"completed":0,"failed":0,"deadLetter":0},"total":2,"pending":0,"processing":0,"completed":0,"failed":0,"deadLetter":0}`)
	golden(t, NotAQueenRoute(), `{"error":"not a Queen route"}`)
	golden(t, StatsRefreshed(), `{"success":true}`)
	var st map[string]json.RawMessage
	if err := json.Unmarshal(jsonapi.AppendResource(nil, Status{Throughput: []json.RawMessage{}, Workers: []json.RawMessage{},
		Messages: StatusMessages{BatchEfficiency: json.RawMessage(`{}`)}}), &st); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"timeRange", "bucketMinutes", "pointCount", "throughput", "queues", "messages", "leases", "deadLetterQueue", "workers", "errors", "statsAge"} {
		if _, ok := st[k]; !ok {
			t.Errorf("status without %q", k)
		}
	}
	if string(st["throughput"]) != "[]" || string(st["workers"]) != "[]" {
		t.Errorf("status lists: %s %s", st["throughput"], st["workers"])
	}
}

func TestParseStatusQueries(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	get := func(q string) func(string) string {
		v, err := url.ParseQuery(q)
		if err != nil {
			t.Fatal(err)
		}
		return v.Get
	}
	r, err := ParseStatusQuery(get("queue=q&namespace=n&task=t"), now)
	if err != nil || !r.To.Equal(now) || !r.From.Equal(now.Add(-time.Hour)) || r.Queue != "q" || r.Namespace != "n" || r.Task != "t" {
		t.Fatalf("defaults: %+v %v", r, err)
	}
	r, err = ParseStatusQuery(get("from=2026-01-01T00:00:00Z&to=2026-01-01T06:00:00%2B01:00"), now)
	if err != nil || r.To.Sub(r.From) != 5*time.Hour || BucketMinutes(r.To.Sub(r.From)) != 5 {
		t.Fatalf("a range: %+v %v", r, err)
	}
	for q, want := range map[string]string{
		"from=yesterday":            `from must be an RFC 3339 time, got "yesterday"`,
		"to=1":                      `to must be an RFC 3339 time, got "1"`,
		"from=2026-01-03T00:00:00Z": "from must not be after to",
	} {
		_, err := ParseStatusQuery(get(q), now)
		wantBad(t, err, want)
	}
	for span, want := range map[time.Duration]int{time.Hour: 1, 2 * time.Hour: 1, 6 * time.Hour: 5, 24 * time.Hour: 15, 7 * 24 * time.Hour: 60, 30 * 24 * time.Hour: 360} {
		if got := BucketMinutes(span); got != want {
			t.Errorf("bucket of %v: %d, want %d", span, got, want)
		}
	}
	qr, err := ParseQueueStatsQuery(get("namespace=n"))
	if err != nil || qr.Limit != 100 || qr.Offset != 0 || qr.Namespace != "n" {
		t.Fatalf("queue stats defaults: %+v %v", qr, err)
	}
	for q, want := range map[string]string{
		"limit=x":   `limit must be an integer, got "x"`,
		"limit=0":   "limit must be at least 1 and offset at least 0",
		"offset=-1": "limit must be at least 1 and offset at least 0",
	} {
		_, err := ParseQueueStatsQuery(get(q))
		wantBad(t, err, want)
	}
}
