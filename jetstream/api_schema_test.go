package jetstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/nats-io/jsm.go/registry"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// cliValidator is the nats CLI's schema check (natscli v0.5.0
// cli/jsonschema.go, SchemaValidator): jsm.go's schema for the answer's
// type, applied to jsm.go's struct re-encoded, as the CLI does before it
// prints any answer.
type cliValidator struct{}

func (cliValidator) ValidateStruct(data any, schemaType string) (bool, []string) {
	s, err := registry.Schema(schemaType)
	if err != nil {
		return false, []string{"unknown schema type " + schemaType}
	}
	sch, err := jsonschema.CompileString("schema.json", string(s))
	if err != nil {
		return false, []string{err.Error()}
	}
	dj, err := json.Marshal(data)
	if err != nil {
		return false, []string{err.Error()}
	}
	var d any
	dec := json.NewDecoder(bytes.NewReader(dj))
	dec.UseNumber()
	if err := dec.Decode(&d); err != nil {
		return false, []string{err.Error()}
	}
	if err := sch.Validate(d); err != nil {
		ve, ok := err.(*jsonschema.ValidationError)
		if !ok {
			return false, []string{err.Error()}
		}
		var errs []string
		for _, e := range ve.BasicOutput().Errors {
			if e.KeywordLocation != "" && e.Error != "oneOf failed" && e.Error != "allOf failed" {
				errs = append(errs, fmt.Sprintf("%s: %s", e.InstanceLocation, e.Error))
			}
		}
		return false, errs
	}
	return true, nil
}

// validAs fails the test unless body is a valid answer of type typ for
// the nats CLI.
func validAs(t *testing.T, what string, body []byte, typ string) {
	t.Helper()
	got, _, err := registry.ParseAndValidateMessage(body, cliValidator{})
	if err != nil {
		t.Errorf("%s: not a valid answer for the nats CLI: %v\n%s", what, err, body)
		return
	}
	if got != typ {
		t.Errorf("%s: type %s, want %s", what, got, typ)
	}
}

// Every answer the CLI reads passes its schema check; two are compared
// whole, so that a field that goes missing or changes shape is seen.
func TestAnswersPassTheCLISchemas(t *testing.T) {
	h := newHarness(t, nil)
	creates := []struct{ what, api, body string }{
		{"durable, two filters", "CONSUMER.CREATE.ORDERS.workers",
			`{"stream_name":"ORDERS","config":{"durable_name":"workers","deliver_policy":"all","ack_policy":"explicit","filter_subjects":["orders.eu.>","orders.us.>"],"replay_policy":"instant","num_replicas":0},"action":""}`},
		{"the CLI's add --pull --defaults", "CONSUMER.CREATE.ORDERS.cli",
			`{"stream_name":"ORDERS","config":{"durable_name":"cli","name":"cli","deliver_policy":"all","ack_policy":"explicit","ack_wait":30000000000,"max_deliver":-1,"replay_policy":"instant","max_waiting":512,"max_ack_pending":1000,"num_replicas":0,"pause_until":"0001-01-01T00:00:00Z"},"action":"create"}`},
		{"by start time", "CONSUMER.CREATE.ORDERS.since.orders.eu.*",
			`{"stream_name":"ORDERS","config":{"durable_name":"since","deliver_policy":"by_start_time","opt_start_time":"2026-12-01T00:00:00Z","ack_policy":"all","filter_subject":"orders.eu.*","replay_policy":"instant","num_replicas":0}}`},
		{"by start sequence", "CONSUMER.CREATE.ORDERS.from",
			`{"stream_name":"ORDERS","config":{"deliver_policy":"by_start_sequence","opt_start_seq":17,"ack_policy":"explicit","backoff":[1000000000,5000000000],"max_deliver":5,"replay_policy":"instant"}}`},
		{"ephemeral, ack none", "CONSUMER.CREATE.ORDERS.ord_1",
			`{"stream_name":"ORDERS","config":{"name":"ord_1","deliver_policy":"new","ack_policy":"none","replay_policy":"instant","mem_storage":true,"num_replicas":1,"inactive_threshold":300000000000}}`},
		{"legacy durable", "CONSUMER.DURABLE.CREATE.ORDERS.old",
			`{"stream_name":"ORDERS","config":{"durable_name":"old","deliver_policy":"last","ack_policy":"explicit","replay_policy":"instant"}}`},
	}
	for _, c := range creates {
		validAs(t, c.what, h.request(t, c.api, c.body), typeConsumerCreate)
	}

	// Whole answers.
	got := h.request(t, "CONSUMER.INFO.ORDERS.workers", "")
	want := `{"type":"io.nats.jetstream.api.v1.consumer_info_response","stream_name":"ORDERS","name":"workers","created":"2026-12-02T10:00:00Z",` +
		`"config":{"durable_name":"workers","name":"workers","deliver_policy":"all","ack_policy":"explicit","ack_wait":30000000000,"max_deliver":-1,` +
		`"filter_subjects":["orders.eu.>","orders.us.>"],"replay_policy":"instant","max_waiting":512,"max_ack_pending":1000,"num_replicas":0},` +
		`"delivered":{"consumer_seq":0,"stream_seq":0},"ack_floor":{"consumer_seq":0,"stream_seq":0},"num_ack_pending":0,"num_redelivered":0,` +
		`"num_waiting":0,"num_pending":42,"ts":"2026-12-02T10:00:00Z"}`
	if string(got) != want {
		t.Errorf("consumer info:\n got %s\nwant %s", got, want)
	}
	validAs(t, "consumer info", got, typeConsumerInfo)
	got = h.request(t, "STREAM.INFO.AUDIT", "")
	want = `{"type":"io.nats.jetstream.api.v1.stream_info_response","config":{"name":"AUDIT","subjects":["audit.*.events"],"retention":"limits",` +
		`"max_consumers":-1,"max_msgs":-1,"max_bytes":-1,"max_age":0,"max_msgs_per_subject":-1,"max_msg_size":16777216,"discard":"old",` +
		`"storage":"file","num_replicas":1,"allow_direct":false,"deny_delete":true,"deny_purge":true},"created":"2026-12-02T09:00:00Z",` +
		`"state":{"messages":42,"bytes":4200,"first_seq":1,"first_ts":"2026-12-02T09:00:00Z","last_seq":30,"last_ts":"2026-12-02T09:59:00Z",` +
		`"consumer_count":0},"ts":"2026-12-02T10:00:00Z"}`
	if string(got) != want {
		t.Errorf("stream info:\n got %s\nwant %s", got, want)
	}
	validAs(t, "stream info", got, typeStreamInfo)
	// The check bites (the CLI re-encodes jsm.go's struct, which fills in
	// a missing field, so a value out of range is what shows it).
	if _, _, err := registry.ParseAndValidateMessage(bytes.Replace(got, []byte(`"num_replicas":1`), []byte(`"num_replicas":9`), 1), cliValidator{}); err == nil {
		t.Error("a stream info with 9 replicas passed the CLI's schema check")
	}

	answers := []struct{ what, api, body, typ string }{
		{"stream info", "STREAM.INFO.ORDERS", "", typeStreamInfo},
		{"stream info, a request body", "STREAM.INFO.ORDERS", `{"deleted_details":false}`, typeStreamInfo},
		{"stream list", "STREAM.LIST", `{"offset":0}`, typeStreamList},
		{"stream names", "STREAM.NAMES", `{"offset":0}`, typeStreamNames},
		{"stream names by subject", "STREAM.NAMES", `{"offset":0,"subject":"audit.eu.events"}`, typeStreamNames},
		{"consumer list", "CONSUMER.LIST.ORDERS", `{"offset":0}`, typeConsumerList},
		{"consumer names", "CONSUMER.NAMES.ORDERS", "", typeConsumerNames},
		{"consumer names, none", "CONSUMER.NAMES.AUDIT", "", typeConsumerNames},
		{"account info", "INFO", "", typeAccountInfo},
		{"consumer delete", "CONSUMER.DELETE.ORDERS.old", "", typeConsumerDelete},
	}
	for _, a := range answers {
		validAs(t, a.what, h.request(t, a.api, a.body), a.typ)
	}

	// An error answer is read before any schema check (jsm.go
	// manager.go, jsonRequest): it must decode into the CLI's type and
	// carry the error.
	errs := []struct{ what, api, body, typ string }{
		{"unknown stream", "STREAM.INFO.NOPE", "", typeStreamInfo},
		{"unknown consumer", "CONSUMER.INFO.ORDERS.nobody", "", typeConsumerInfo},
		{"consumer delete of none", "CONSUMER.DELETE.ORDERS.old", "", typeConsumerDelete},
		{"consumer names of an unknown stream", "CONSUMER.NAMES.NOPE", "", typeConsumerNames},
		{"stream names, a bad body", "STREAM.NAMES", `{"offset":"x"}`, typeStreamNames},
	}
	for _, e := range errs {
		body := h.request(t, e.api, e.body)
		typ, msg, err := registry.ParseMessage(body)
		if err != nil || typ != e.typ {
			t.Errorf("%s: %s, %v (want type %s)", e.what, typ, err, e.typ)
			continue
		}
		if r, ok := msg.(interface{ ToError() error }); !ok || r.ToError() == nil {
			t.Errorf("%s: the CLI reads no error from %s", e.what, body)
		}
	}
}
