package jsonapi

import (
	"strings"
	"testing"
	"time"
)

// The pop request: its query parameters (HTTP) or body (NATS), then Validate's
// defaults and bounds.

func TestParsePopQuery(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		query func(string) string
		want  PopRequest
		err   string
	}{
		{name: "none", query: params()},
		{name: "all", query: params("batch", "25", "timeout", "1500", "partitions", "4", "wait", "true",
			"autoAck", "1", "consumerGroup", "billing", "subscriptionMode", "new", "subscriptionFrom", "now"),
			want: PopRequest{Batch: 25, TimeoutMs: 1500, Partitions: 4, Wait: true, AutoAck: true,
				ConsumerGroup: "billing", SubscriptionMode: "new", SubscriptionFrom: "now"}},
		{name: "negative numbers are left to Validate", query: params("batch", "-1", "timeout", "-2", "partitions", "-3"),
			want: PopRequest{Batch: -1, TimeoutMs: -2, Partitions: -3}},
		{name: "booleans false", query: params("wait", "false", "autoAck", "0")},
		{name: "batch not a number", query: params("batch", "ten"), err: `batch must be an integer, got "ten"`},
		{name: "batch beyond 32 bits", query: params("batch", "2147483648"), err: `batch must be an integer, got "2147483648"`},
		{name: "batch a fraction", query: params("batch", "1.5"), err: `batch must be an integer, got "1.5"`},
		{name: "timeout not a number", query: params("timeout", "30s"), err: `timeout must be an integer, got "30s"`},
		{name: "partitions not a number", query: params("partitions", " 2"), err: `partitions must be an integer, got " 2"`},
		{name: "wait not a boolean", query: params("wait", "yes"), err: `wait must be true or false, got "yes"`},
		{name: "autoAck not a boolean", query: params("autoAck", "on"), err: `autoAck must be true or false, got "on"`},
		{name: "integers are read first", query: params("wait", "yes", "partitions", "x"), err: `partitions must be an integer, got "x"`},
	} {
		got, err := ParsePopQuery(c.query)
		wantBad(t, err, c.err)
		if c.err == "" && got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestDecodePop(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		body string
		want PopRequest
		err  string
	}{
		{body: `{}`},
		{body: `{"queue":"orders.eu","partition":"customer-42","batch":5,"wait":true,"timeout":100,"consumerGroup":"g",` +
			`"autoAck":true,"subscriptionMode":"new","subscriptionFrom":"2026-01-02T03:04:05Z","partitions":3,"unknown":[1],` +
			`"requestId":"r-1","expiresMs":2500}`,
			want: PopRequest{Queue: "orders.eu", Partition: "customer-42", Batch: 5, Wait: true, TimeoutMs: 100, ConsumerGroup: "g",
				AutoAck: true, SubscriptionMode: "new", SubscriptionFrom: "2026-01-02T03:04:05Z", Partitions: 3, RequestID: "r-1", ExpiresMs: 2500}},
		{body: `{"queue":"q","From":"2026-01-02T03:04:05Z"}`, want: PopRequest{Queue: "q"}}, // From is Validate's, never the body's
		{body: `{"queue":null,"batch":null}`},
		{body: `{"batch":"5"}`, err: `pop body: json: cannot unmarshal string into Go struct field PopRequest.batch of type int`},
		{body: `{"wait":"true"}`, err: `pop body: json: cannot unmarshal string into Go struct field PopRequest.wait of type bool`},
		{body: `{"batch":1.5}`, err: `pop body: json: cannot unmarshal number 1.5 into Go struct field PopRequest.batch of type int`},
		{body: `[]`, err: `pop body: json: cannot unmarshal array into Go value of type jsonapi.PopRequest`},
		{body: ``, err: `pop body: unexpected end of JSON input`},
		{body: `{"queue":"q"`, err: `pop body: unexpected end of JSON input`},
		{body: `queue=q`, err: `pop body: invalid character 'q' looking for beginning of value`},
	} {
		got, err := DecodePop([]byte(c.body))
		wantBad(t, err, c.err)
		if c.err == "" && got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.body, got, c.want)
		}
	}
}

func TestPopRequestValidate(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 256)
	from := time.Date(2026, 11, 30, 14, 0, 0, 500000000, time.FixedZone("", 2*3600))
	// base is what Validate makes of a pop that names only its queue.
	// An absent subscriptionMode stays "": the consumer applies its
	// configured default (QUEEN_DEFAULT_SUBSCRIPTION_MODE).
	base := PopRequest{Queue: "q", Batch: 1, TimeoutMs: 30000, ConsumerGroup: QueueModeGroup, Partitions: 1}
	all := func(r *PopRequest) { r.SubscriptionMode = "all" }
	with := func(f func(*PopRequest)) PopRequest { r := base; f(&r); return r }
	for _, c := range []struct {
		name   string
		in     PopRequest
		want   PopRequest
		err    string
		wantAt time.Time // want.From
	}{
		{name: "defaults", in: PopRequest{Queue: "q"}, want: base},
		{name: "one partition", in: PopRequest{Queue: "q", Partition: "p"}, want: with(func(r *PopRequest) { r.Partition = "p" })},
		{name: "no queue", in: PopRequest{}, err: "queue is required"},
		{name: "queue too long", in: PopRequest{Queue: long}, err: "queue must be 1..255 bytes, got 256"},
		{name: "queue not UTF-8", in: PopRequest{Queue: "q\xff"}, err: "queue must be valid UTF-8"},
		{name: "queue control", in: PopRequest{Queue: "q\n"}, err: "queue must not contain control characters"},
		{name: "partition control", in: PopRequest{Queue: "q", Partition: "p\x7f"}, err: "partition must not contain control characters"},
		{name: "partition too long", in: PopRequest{Queue: "q", Partition: long}, err: "partition must be 1..255 bytes, got 256"},
		{name: "named group", in: PopRequest{Queue: "q", ConsumerGroup: "billing"}, want: with(func(r *PopRequest) { r.ConsumerGroup = "billing" })},
		{name: "group too long", in: PopRequest{Queue: "q", ConsumerGroup: long}, err: "consumerGroup must be 1..255 bytes, got 256"},
		{name: "group control", in: PopRequest{Queue: "q", ConsumerGroup: "g\x00"}, err: "consumerGroup must not contain control characters"},

		{name: "batch max", in: PopRequest{Queue: "q", Batch: 10000}, want: with(func(r *PopRequest) { r.Batch = 10000 })},
		{name: "batch over", in: PopRequest{Queue: "q", Batch: 10001}, err: "batch must be 1..10000, got 10001"},
		{name: "batch negative", in: PopRequest{Queue: "q", Batch: -1}, err: "batch must be 1..10000, got -1"},
		{name: "partitions max", in: PopRequest{Queue: "q", Partitions: 100}, want: with(func(r *PopRequest) { r.Partitions = 100 })},
		{name: "partitions over", in: PopRequest{Queue: "q", Partitions: 101}, err: "partitions must be 1..100, got 101"},
		{name: "partitions negative", in: PopRequest{Queue: "q", Partitions: -5}, err: "partitions must be 1..100, got -5"},
		{name: "timeout one ms", in: PopRequest{Queue: "q", TimeoutMs: 1}, want: with(func(r *PopRequest) { r.TimeoutMs = 1 })},
		{name: "timeout max", in: PopRequest{Queue: "q", TimeoutMs: 300000}, want: with(func(r *PopRequest) { r.TimeoutMs = 300000 })},
		{name: "timeout over", in: PopRequest{Queue: "q", TimeoutMs: 300001}, err: "timeout must be 0..300000 ms, got 300001"},
		{name: "timeout negative", in: PopRequest{Queue: "q", TimeoutMs: -1}, err: "timeout must be 0..300000 ms, got -1"},
		{name: "request id", in: PopRequest{Queue: "q", RequestID: "r-1", ExpiresMs: 1},
			want: with(func(r *PopRequest) { r.RequestID, r.ExpiresMs = "r-1", 1 })},
		{name: "request id too long", in: PopRequest{Queue: "q", RequestID: long}, err: "requestId must be 1..255 bytes, got 256"},
		{name: "request id control", in: PopRequest{Queue: "q", RequestID: "r\n"}, err: "requestId must not contain control characters"},
		{name: "expires negative", in: PopRequest{Queue: "q", ExpiresMs: -1}, err: "expiresMs must be at least 0, got -1"},
		{name: "bounds in order", in: PopRequest{Queue: "q", Batch: -1, Partitions: -1, TimeoutMs: -1}, err: "batch must be 1..10000, got -1"},

		{name: "mode all", in: PopRequest{Queue: "q", SubscriptionMode: "all"}, want: with(all)},
		{name: "mode new", in: PopRequest{Queue: "q", SubscriptionMode: "new"}, want: with(func(r *PopRequest) { r.SubscriptionMode = "new" })},
		{name: "mode new-only", in: PopRequest{Queue: "q", SubscriptionMode: "new-only"}, want: with(func(r *PopRequest) { r.SubscriptionMode = "new" })},
		// docs/consumers.md: any other value reads from the beginning; none is an error.
		{name: "mode from_beginning", in: PopRequest{Queue: "q", SubscriptionMode: "from_beginning"}, want: with(all)},
		{name: "mode NEW", in: PopRequest{Queue: "q", SubscriptionMode: "NEW"}, want: with(all)},
		{name: "mode typo", in: PopRequest{Queue: "q", SubscriptionMode: "nwe"}, want: with(all)},
		{name: "from a time with mode new", in: PopRequest{Queue: "q", SubscriptionMode: "new-only", SubscriptionFrom: "2026-01-02T03:04:05Z"},
			want: with(func(r *PopRequest) { r.SubscriptionMode, r.SubscriptionFrom = "new", "2026-01-02T03:04:05Z" }), wantAt: atWhole},
		{name: "from now", in: PopRequest{Queue: "q", SubscriptionFrom: "now"},
			want: with(func(r *PopRequest) { r.SubscriptionMode, r.SubscriptionFrom = "new", "now" })},
		{name: "from now beats mode all", in: PopRequest{Queue: "q", SubscriptionMode: "from_beginning", SubscriptionFrom: "now"},
			want: with(func(r *PopRequest) { r.SubscriptionMode, r.SubscriptionFrom = "new", "now" })},
		{name: "from a time", in: PopRequest{Queue: "q", SubscriptionFrom: "2026-11-30T14:00:00.5+02:00"},
			want: with(func(r *PopRequest) { r.SubscriptionFrom = "2026-11-30T14:00:00.5+02:00" }), wantAt: from},
		{name: "from a whole second", in: PopRequest{Queue: "q", SubscriptionFrom: "2026-01-02T03:04:05Z"},
			want: with(func(r *PopRequest) { r.SubscriptionFrom = "2026-01-02T03:04:05Z" }), wantAt: atWhole},
		{name: "from a date", in: PopRequest{Queue: "q", SubscriptionFrom: "2026-11-30"}, err: `subscriptionFrom must be now or an RFC 3339 time, got "2026-11-30"`},
		{name: "from NOW", in: PopRequest{Queue: "q", SubscriptionFrom: "NOW"}, err: `subscriptionFrom must be now or an RFC 3339 time, got "NOW"`},
		{name: "from no zone", in: PopRequest{Queue: "q", SubscriptionFrom: "2026-11-30T12:00:00"}, err: `subscriptionFrom must be now or an RFC 3339 time, got "2026-11-30T12:00:00"`},
	} {
		got := c.in
		err := got.Validate()
		wantBad(t, err, c.err)
		if c.err != "" {
			continue
		}
		if !got.From.Equal(c.wantAt) {
			t.Errorf("%s: From %v, want %v", c.name, got.From, c.wantAt)
		}
		got.From, c.want.From = time.Time{}, time.Time{}
		if got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

// A query goes through ParsePopQuery and Validate as the front door takes it.
func TestPopQueryValidated(t *testing.T) {
	t.Parallel()
	r, err := ParsePopQuery(params("batch", "0", "partitions", "0", "timeout", "0"))
	if err != nil {
		t.Fatal(err)
	}
	r.Queue = "q"
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	if r.Batch != 1 || r.Partitions != 1 || r.TimeoutMs != DefaultPopWaitMs {
		t.Fatalf("zeros are not the defaults: %+v", r)
	}
}

// A pop parks at most what its requester waits, less a fifth of it for the
// answer's way back, at most 250 ms.
func TestRequesterWait(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ expires, want time.Duration }{
		{0, 0},
		{time.Millisecond, 800 * time.Microsecond},
		{time.Second, 800 * time.Millisecond},
		{31 * time.Second, 31*time.Second - 250*time.Millisecond},
	} {
		if got := RequesterWait(c.expires); got != c.want {
			t.Errorf("RequesterWait(%v) = %v, want %v", c.expires, got, c.want)
		}
	}
}
