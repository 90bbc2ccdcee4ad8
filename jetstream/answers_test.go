package jetstream

import (
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
	"github.com/queenbridge/queenbridge/jsonapi"
)

// The templates are JetStream's shapes: nats.go parses them as it parses
// nats-server's answers.
func TestAcksParseAsJetStreamAnswers(t *testing.T) {
	a := jsonapi.NewPubAcks("ORDERS")
	var resp struct {
		Error *js.APIError `json:"error"`
		*js.PubAck
	}
	check := func(b []byte) {
		t.Helper()
		resp.Error, resp.PubAck = nil, nil
		if err := json.Unmarshal(b, &resp); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
	}
	check(a.AppendQueued(nil, 118))
	if resp.Error != nil || resp.Stream != "ORDERS" || resp.Sequence != 118 || resp.Duplicate {
		t.Fatalf("queued: %+v %+v", resp.Error, resp.PubAck)
	}
	check(a.AppendDuplicate(nil, 97))
	if resp.Error != nil || resp.Sequence != 97 || !resp.Duplicate {
		t.Fatalf("duplicate: %+v", resp.PubAck)
	}
	check(a.AppendBuffered(nil))
	var raw map[string]any
	if json.Unmarshal(a.AppendBuffered(nil), &raw) != nil || raw["buffered"] != true || resp.Sequence != 0 || resp.Stream != "ORDERS" {
		t.Fatalf("buffered: %s", a.AppendBuffered(nil))
	}
	check(a.AppendFailed(nil, 400, errStreamNotMatch, `expected stream "does" not match\n`))
	if resp.Error == nil || resp.Error.Code != 400 || resp.Error.ErrorCode != js.ErrorCode(errStreamNotMatch) ||
		resp.Error.Description != `expected stream "does" not match\n` || resp.Stream != "ORDERS" || resp.Sequence != 0 {
		t.Fatalf("refusal: %+v %+v", resp.Error, resp.PubAck)
	}
}

// Headers that ask for what the streams cannot do are refused by name;
// Nats-Msg-Id, Nats-Expected-Stream and any other header are not.
func TestUnsupportedHeaders(t *testing.T) {
	for name, code := range map[string]int{
		"Nats-Expected-Last-Sequence": errBadRequest, "Nats-Expected-Last-Msg-Id": errBadRequest,
		"Nats-Expected-Last-Subject-Sequence": errBadRequest, "Nats-Expected-Last-Subject-Sequence-Subject": errBadRequest,
		"Nats-TTL": errTTLDisabled, "Nats-Schedule": errSchedulesDisabled, "Nats-Schedule-Target": errSchedulesDisabled,
		"Nats-Incr": errCountersDisabled, "Nats-Batch-Id": errAtomicDisabled, "Nats-Rollup": errBadRequest,
	} {
		r := unsupported(nats.Header{name: {"1"}, "Nats-Msg-Id": {"x"}})
		if r == nil || r.code != 400 || r.errCode != code || len(r.desc) < len(name) || r.desc[:len(name)] != name {
			t.Errorf("%s: %+v", name, r)
		}
	}
	ok := nats.Header{"Nats-Msg-Id": {"x"}, "Nats-Expected-Stream": {"S"}, "traceparent": {"t"}, "nats-ttl": {"1s"}}
	if r := unsupported(ok); r != nil {
		t.Errorf("refused %+v", r)
	}
	// The check runs on every publish: what it lets through costs nothing.
	if n := testing.AllocsPerRun(100, func() { unsupported(ok) }); n != 0 {
		t.Errorf("a publish with supported headers costs %v allocations in the check", n)
	}
}
