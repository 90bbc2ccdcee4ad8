package admin

import (
	"errors"
	"github.com/queenbridge/queenbridge/jsonapi"
	"strings"
	"testing"
	"time"
)

// The seek and subscription bodies: any bytes decode or are refused with a
// BadRequest, never a panic; what is let through says where to go.
func FuzzDecodeGroupBodies(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"toEnd":true}`, `{"toEnd":false,"timestamp":"2026-01-02T03:04:05.123Z"}`,
		`{"timestamp":"friday"}`, `{"toEnd":"yes"}`, `{"subscriptionTimestamp":"2026-01-02T03:04:05+02:00"}`,
		`{"subscriptionTimestamp":12}`, `[1]`, `{"timestamp":null,"toEnd":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var bad *jsonapi.BadRequest
		to, err := DecodeSeek(body)
		if err != nil && !errors.As(err, &bad) {
			t.Fatalf("seek %q: error of the wrong kind: %v", body, err)
		}
		if err == nil && to.ToEnd && !to.At.IsZero() {
			t.Fatalf("seek %q: both the end and a time: %+v", body, to)
		}
		sent, at, err := DecodeSubscription(body)
		if err != nil && !errors.As(err, &bad) {
			t.Fatalf("subscription %q: error of the wrong kind: %v", body, err)
		}
		if err == nil {
			if back, perr := time.Parse(time.RFC3339Nano, sent); perr != nil || !back.Equal(at) {
				t.Fatalf("subscription %q: sent %q is not %v", body, sent, at)
			}
		}
	})
}

// The answers as Queen writes them: times in UTC with milliseconds, null
// for what is not there, snake_case for the lagging list.
func TestGroupAnswers(t *testing.T) {
	at := time.Date(2026, 11, 29, 23, 41, 7, 123456789, time.FixedZone("", 3600))
	for _, c := range []struct{ got, want string }{
		{string(GroupList([]GroupSummary{{Name: "g", Queue: "q", Members: 2, PartitionsWithLag: 1, TotalLag: 5, MaxTimeLag: 9, State: "Stable",
			SubscriptionMode: "timestamp", SubscriptionAt: at}})),
			`[{"name":"g","queueName":"q","topics":["q"],"members":2,"partitionsWithLag":1,"totalLag":5,"maxTimeLag":9,"state":"Stable",` +
				`"subscriptionMode":"timestamp","subscriptionTimestamp":"2026-11-29T22:41:07.123Z","subscriptionCreatedAt":null}]`},
		{string(GroupList(nil)), `[]`},
		{string(GroupDetail(nil)), `{}`},
		{string(GroupDetail([]GroupQueue{{Queue: "q", Partitions: []GroupPartition{{Partition: "p", TotalConsumed: 3}}}})),
			`{"q":{"partitions":[{"partition":"p","workerId":null,"lastConsumedAt":null,"totalConsumed":3,"offsetLag":0,"timeLagSeconds":0,"leaseActive":false}]}}`},
		{string(LaggingList([]LaggingPartition{{Group: "g", Queue: "q", Partition: "p", PartitionID: 17, WorkerID: "w", OffsetLag: 2,
			TimeLagSeconds: 5400, OldestUnconsumedAt: at}})),
			`[{"consumer_group":"g","queue_name":"q","partition_name":"p","partition_id":"17","worker_id":"w","offset_lag":2,` +
				`"time_lag_seconds":5400,"lag_hours":1.5,"oldest_unconsumed_at":"2026-11-29T22:41:07.123Z","last_consumed_at":null}]`},
		{string(GroupDeleted("g", "", 0, true)), `{"success":true,"consumerGroup":"g","deletedPartitions":0,"metadataDeleted":true}`},
		{string(GroupDeleted("g", "q", 2, false)), `{"success":true,"consumerGroup":"g","queueName":"q","deletedPartitions":2,"metadataDeleted":false}`},
		{string(Seeked("g", "q", SeekTarget{ToEnd: true}, 3)),
			`{"success":true,"consumerGroup":"g","queueName":"q","seekToEnd":true,"targetTimestamp":null,"partitionsUpdated":3}`},
		{string(Seeked("g", "q", SeekTarget{At: at}, 1)),
			`{"success":true,"consumerGroup":"g","queueName":"q","seekToEnd":false,"targetTimestamp":"2026-11-29T22:41:07.123Z","partitionsUpdated":1}`},
		{string(PartitionSeeked("g", "q", "p", 7)), `{"success":true,"consumerGroup":"g","queueName":"q","partitionName":"p","updated":true,"cursorMovedTo":7}`},
		{string(SubscriptionUpdated("g", "2026-01-02T03:04:05Z", 2)), `{"success":true,"consumerGroup":"g","newTimestamp":"2026-01-02T03:04:05Z","rowsUpdated":2}`},
	} {
		if c.got != c.want {
			t.Errorf("got  %s\nwant %s", c.got, c.want)
		}
	}
	for v, want := range map[string]bool{"true": true, "1": true, "": true, "false": false, "0": false, "yes": false, "TRUE": false} {
		if got := DeleteMetadata(func(string) string { return v }); got != want {
			t.Errorf("deleteMetadata=%q is %v", v, got)
		}
	}
	if n, err := ParseMinLagSeconds(func(string) string { return "" }); n != DefaultMinLagSeconds || err != nil {
		t.Errorf("no minLagSeconds: %d %v", n, err)
	}
	if _, err := ParseMinLagSeconds(func(string) string { return "1h" }); err == nil || !strings.HasPrefix(err.Error(), "minLagSeconds") {
		t.Errorf("minLagSeconds=1h: %v", err)
	}
}
