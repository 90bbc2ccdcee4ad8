package jsonapi

import (
	"strings"
	"testing"
)

// Reads: GET /api/v1/messages' query or <prefix>.v1.fetch's body, and
// Validate's defaults and bounds.

func TestParseFetchQuery(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		query func(string) string
		want  FetchRequest
		err   string
	}{
		{query: params()},
		{query: params("queue", "orders", "partition", "p", "from", "9223372036854775807", "limit", "10", "waitMs", "250", "maxBytes", "1048576"),
			want: FetchRequest{Queue: "orders", Partition: "p", From: 9223372036854775807, Limit: 10, WaitMs: 250, MaxBytes: 1048576}},
		{query: params("from", "-1", "limit", "-2", "waitMs", "-3", "maxBytes", "-4"), want: FetchRequest{From: -1, Limit: -2, WaitMs: -3, MaxBytes: -4}},
		{query: params("from", "one"), err: `from must be an integer, got "one"`},
		{query: params("from", "9223372036854775808"), err: `from must be an integer, got "9223372036854775808"`},
		{query: params("limit", "2147483648"), err: `limit must be an integer, got "2147483648"`},
		{query: params("limit", "0x10"), err: `limit must be an integer, got "0x10"`},
		{query: params("waitMs", "1s"), err: `waitMs must be an integer, got "1s"`},
		{query: params("maxBytes", "1MiB"), err: `maxBytes must be an integer, got "1MiB"`},
		{query: params("maxBytes", "1_000"), err: `maxBytes must be an integer, got "1_000"`},
		{query: params("limit", "x", "from", "y"), err: `from must be an integer, got "y"`}, // in the order from, limit, waitMs, maxBytes
	} {
		got, err := ParseFetchQuery(c.query)
		wantBad(t, err, c.err)
		if c.err == "" && got != c.want {
			t.Errorf("got %+v, want %+v", got, c.want)
		}
	}
}

func TestDecodeFetch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		body string
		want FetchRequest
		err  string
	}{
		{body: `{}`},
		{body: `{"queue":"orders","partition":"p","from":5,"limit":10,"waitMs":100,"maxBytes":1000,"other":null}`,
			want: FetchRequest{Queue: "orders", Partition: "p", From: 5, Limit: 10, WaitMs: 100, MaxBytes: 1000}},
		{body: `{"from":"5"}`, err: "fetch body: json: cannot unmarshal string into Go struct field FetchRequest.from of type int64"},
		{body: `{"limit":1.5}`, err: "fetch body: json: cannot unmarshal number 1.5 into Go struct field FetchRequest.limit of type int"},
		{body: `{"from":9223372036854775808}`, err: "fetch body: json: cannot unmarshal number 9223372036854775808 into Go struct field FetchRequest.from of type int64"},
		{body: `[]`, err: "fetch body: json: cannot unmarshal array into Go value of type jsonapi.FetchRequest"},
		{body: `queue=orders`, err: "fetch body: invalid character 'q' looking for beginning of value"},
	} {
		got, err := DecodeFetch([]byte(c.body))
		wantBad(t, err, c.err)
		if c.err == "" && got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.body, got, c.want)
		}
	}
}

func TestFetchRequestValidate(t *testing.T) {
	t.Parallel()
	base := FetchRequest{Queue: "q", Partition: DefaultPartition, From: 1, Limit: 100, MaxBytes: DefaultReadBytes}
	with := func(f func(*FetchRequest)) FetchRequest { r := base; f(&r); return r }
	for _, c := range []struct {
		in, want FetchRequest
		err      string
	}{
		{in: FetchRequest{Queue: "q"}, want: base},
		{in: FetchRequest{Queue: "q", Partition: "p", From: 7, Limit: 1000, WaitMs: 300000, MaxBytes: MaxReadBytes},
			want: with(func(r *FetchRequest) {
				r.Partition, r.From, r.Limit, r.WaitMs, r.MaxBytes = "p", 7, 1000, 300000, MaxReadBytes
			})},
		{in: FetchRequest{Queue: "q", Limit: 1, MaxBytes: 1}, want: with(func(r *FetchRequest) { r.Limit, r.MaxBytes = 1, 1 })},
		{in: FetchRequest{}, err: "queue is required"},
		{in: FetchRequest{Queue: strings.Repeat("q", 256)}, err: "queue must be 1..255 bytes, got 256"},
		{in: FetchRequest{Queue: "q", Partition: "p\u0085"}, err: "partition must not contain control characters"},
		{in: FetchRequest{Queue: "q", From: -1}, err: "from must be at least 1, got -1"},
		{in: FetchRequest{Queue: "q", Limit: 1001}, err: "limit must be 1..1000, got 1001"},
		{in: FetchRequest{Queue: "q", Limit: -1}, err: "limit must be 1..1000, got -1"},
		{in: FetchRequest{Queue: "q", MaxBytes: MaxReadBytes + 1}, err: "maxBytes must be 1..16777216, got 16777217"},
		{in: FetchRequest{Queue: "q", MaxBytes: -1}, err: "maxBytes must be 1..16777216, got -1"},
		{in: FetchRequest{Queue: "q", WaitMs: 300001}, err: "waitMs must be 0..300000, got 300001"},
		{in: FetchRequest{Queue: "q", WaitMs: -1}, err: "waitMs must be 0..300000, got -1"},
	} {
		got := c.in
		err := got.Validate()
		wantBad(t, err, c.err)
		if c.err == "" && got != c.want {
			t.Errorf("%+v: got %+v, want %+v", c.in, got, c.want)
		}
	}
}
