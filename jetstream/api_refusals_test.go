package jetstream

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testkit"
)

// apiAnswer reads an answer's error, if any.
func apiAnswer(t *testing.T, body []byte) *apiError {
	t.Helper()
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("answer %s: %v", body, err)
	}
	return r.Error
}

// createBody is a CONSUMER.CREATE request for ORDERS with config.
func createBody(config string) string {
	return `{"stream_name":"ORDERS","config":` + config + `}`
}

// Every refusal: the code, nats-server's error code and its text (or,
// where nats-server has none, bad request naming what is not served).
// Nothing refused reaches the engine.
func TestRefusalsCarryJetStreamCodes(t *testing.T) {
	h := newHarness(t, nil)
	pull := `"ack_policy":"explicit","deliver_policy":"all"`
	cases := []struct {
		what, api, body string
		want            apiError
	}{
		// What a pull consumer here cannot do.
		{"push consumer", "CONSUMER.CREATE.ORDERS.p", createBody(`{"durable_name":"p","deliver_subject":"out",` + pull + `}`),
			apiError{400, 10003, "bad request: a push consumer (deliver_subject, deliver_group) is not supported by queen-bridge"}},
		{"deliver group", "CONSUMER.CREATE.ORDERS.p", createBody(`{"deliver_group":"g",` + pull + `}`),
			apiError{400, 10003, "bad request: a push consumer (deliver_subject, deliver_group) is not supported by queen-bridge"}},
		{"flow control", "CONSUMER.CREATE.ORDERS.p", createBody(`{"flow_control":true,` + pull + `}`),
			apiError{400, 10089, "consumer flow control requires a push based consumer"}},
		{"ack policy flow_control", "CONSUMER.CREATE.ORDERS.p", createBody(`{"ack_policy":"flow_control"}`),
			apiError{400, 10218, "flow control ack policy requires a push based consumer"}},
		{"idle heartbeat", "CONSUMER.CREATE.ORDERS.p", createBody(`{"idle_heartbeat":5000000000,` + pull + `}`),
			apiError{400, 10088, "consumer idle heartbeat requires a push based consumer"}},
		{"rate limit", "CONSUMER.CREATE.ORDERS.p", createBody(`{"rate_limit_bps":1000,` + pull + `}`),
			apiError{400, 10086, "consumer in pull mode can not have rate limit set"}},
		{"sampling", "CONSUMER.CREATE.ORDERS.p", createBody(`{"sample_freq":"50%",` + pull + `}`),
			apiError{400, 10003, "bad request: sampling (sample_freq) is not supported by queen-bridge"}},
		{"replay original", "CONSUMER.CREATE.ORDERS.p", createBody(`{"replay_policy":"original",` + pull + `}`),
			apiError{400, 10003, "bad request: replay_policy original is not supported by queen-bridge"}},
		{"replay unknown", "CONSUMER.CREATE.ORDERS.p", createBody(`{"replay_policy":"fast",` + pull + `}`),
			apiError{400, 10182, "consumer replay policy invalid"}},
		{"priority groups", "CONSUMER.CREATE.ORDERS.p", createBody(`{"priority_groups":["jobs"],"priority_policy":"pinned_client",` + pull + `}`),
			apiError{400, 10003, "bad request: priority groups (priority_groups, priority_policy, priority_timeout) is not supported by queen-bridge"}},
		{"pause", "CONSUMER.CREATE.ORDERS.p", createBody(`{"pause_until":"2099-01-01T00:00:00Z",` + pull + `}`),
			apiError{400, 10003, "bad request: pausing a consumer (pause_until) is not supported by queen-bridge"}},
		{"direct", "CONSUMER.CREATE.ORDERS.p", createBody(`{"direct":true,` + pull + `}`),
			apiError{400, 10003, "bad request: a direct or sourcing consumer is not supported by queen-bridge"}},
		{"replicas", "CONSUMER.CREATE.ORDERS.p", createBody(`{"num_replicas":3,` + pull + `}`),
			apiError{500, 10074, "replicas > 1 not supported in non-clustered mode"}},
		{"ack policy unknown", "CONSUMER.CREATE.ORDERS.p", createBody(`{"ack_policy":"sometimes"}`),
			apiError{400, 10181, "consumer ack policy invalid"}},
		{"deliver policy unknown", "CONSUMER.CREATE.ORDERS.p", createBody(`{"deliver_policy":"later"}`),
			apiError{400, 10025, `invalid JSON: can not unmarshal "later"`}},
		{"a field nobody knows", "CONSUMER.CREATE.ORDERS.p", createBody(`{"ack_policy":"explicit","speed":"fast"}`),
			apiError{400, 10025, `invalid JSON: json: unknown field "speed"`}},
		{"unknown action", "CONSUMER.CREATE.ORDERS.p", `{"stream_name":"ORDERS","config":{"ack_policy":"explicit"},"action":"upsert"}`,
			apiError{400, 10025, `invalid JSON: unknown consumer action: "upsert"`}},
		{"no config", "CONSUMER.CREATE.ORDERS.p", `{"stream_name":"ORDERS"}`,
			apiError{400, 10078, "consumer config required"}},
		// The request against its subject.
		{"stream mismatch", "CONSUMER.CREATE.ORDERS.p", `{"stream_name":"AUDIT","config":{}}`,
			apiError{400, 10056, "stream name in subject does not match request"}},
		{"path separators", `CONSUMER.CREATE.ORDERS.a\b`, createBody(`{}`),
			apiError{400, 10127, "Consumer name can not contain path separators"}},
		{"durable not the subject's", "CONSUMER.CREATE.ORDERS.p", createBody(`{"durable_name":"q"}`),
			apiError{400, 10017, "consumer name in subject does not match durable name in request"}},
		{"legacy durable without one", "CONSUMER.DURABLE.CREATE.ORDERS.p", createBody(`{"ack_policy":"explicit"}`),
			apiError{400, 10018, "consumer expected to be durable but a durable name was not set"}},
		{"legacy durable, no name in subject", "CONSUMER.DURABLE.CREATE.ORDERS", createBody(`{"durable_name":"p"}`),
			apiError{400, 10016, "consumer expected to be durable but no durable name set in subject"}},
		{"legacy ephemeral with a durable", "CONSUMER.CREATE.ORDERS", createBody(`{"durable_name":"p"}`),
			apiError{400, 10020, "consumer expected to be ephemeral but a durable name was set in request"}},
		{"bad name", "CONSUMER.CREATE.ORDERS", createBody(`{"name":"a.b","ack_policy":"explicit"}`),
			apiError{500, 10052, "consumer name can not contain '.', '*', '>', '\\', '/'"}},
		{"a name the ack subject cannot carry", "CONSUMER.CREATE.ORDERS", createBody(`{"name":"a@b","ack_policy":"explicit"}`),
			apiError{500, 10052, "consumer name can not contain white space or '@' on queen-bridge"}},
		// Filters.
		{"filter tokens and filter_subjects", "CONSUMER.CREATE.ORDERS.p.orders.eu", createBody(`{"filter_subjects":["orders.eu"]}`),
			apiError{400, 10137, "consumer with multiple subject filters cannot use subject based API"}},
		{"filter tokens not the request's", "CONSUMER.CREATE.ORDERS.p.orders.eu", createBody(`{"filter_subject":"orders.us"}`),
			apiError{400, 10131, "Consumer create request did not match filtered subject from create subject"}},
		{"both filter forms", "CONSUMER.CREATE.ORDERS.p", createBody(`{"filter_subject":"orders.eu","filter_subjects":["orders.us"]}`),
			apiError{400, 10136, "consumer cannot have both FilterSubject and FilterSubjects specified"}},
		{"empty filter", "CONSUMER.CREATE.ORDERS.p", createBody(`{"filter_subjects":["orders.eu",""]}`),
			apiError{400, 10139, "consumer filter in FilterSubjects cannot be empty"}},
		{"overlapping filters", "CONSUMER.CREATE.ORDERS.p", createBody(`{"filter_subjects":["orders.eu.*","orders.*.1"]}`),
			apiError{400, 10138, "consumer subject filters cannot overlap"}},
		{"filter outside the stream", "CONSUMER.CREATE.ORDERS.p", createBody(`{"filter_subject":"audit.eu.events"}`),
			apiError{400, 10093, "consumer filter subject is not a valid subset of the interest subjects"}},
		// Start positions and redelivery.
		{"all with a sequence", "CONSUMER.CREATE.ORDERS.p", createBody(`{"deliver_policy":"all","opt_start_seq":5}`),
			apiError{400, 10094, "consumer delivery policy is deliver all, but optional start sequence is also set"}},
		{"new with a time", "CONSUMER.CREATE.ORDERS.p", createBody(`{"deliver_policy":"new","opt_start_time":"2026-01-01T00:00:00Z"}`),
			apiError{400, 10094, "consumer delivery policy is deliver new, but optional start time is also set"}},
		{"last per subject without a filter", "CONSUMER.CREATE.ORDERS.p", createBody(`{"deliver_policy":"last_per_subject"}`),
			apiError{400, 10094, "consumer delivery policy is deliver last per subject, but optional filter subject is not set"}},
		{"by start sequence without one", "CONSUMER.CREATE.ORDERS.p", createBody(`{"deliver_policy":"by_start_sequence"}`),
			apiError{400, 10094, "consumer delivery policy is deliver by start sequence, but optional start sequence is not set"}},
		{"by start time without one", "CONSUMER.CREATE.ORDERS.p", createBody(`{"deliver_policy":"by_start_time"}`),
			apiError{400, 10094, "consumer delivery policy is deliver by start time, but optional start time is not set"}},
		{"negative ack wait", "CONSUMER.CREATE.ORDERS.p", createBody(`{"ack_policy":"explicit","ack_wait":-1}`),
			apiError{400, 10183, "consumer ack wait needs to be positive"}},
		{"negative backoff", "CONSUMER.CREATE.ORDERS.p", createBody(`{"ack_policy":"explicit","backoff":[1000,-1]}`),
			apiError{400, 10184, "consumer backoff needs to be positive"}},
		{"max deliver within backoff", "CONSUMER.CREATE.ORDERS.p", createBody(`{"ack_policy":"explicit","backoff":[1000,2000],"max_deliver":2}`),
			apiError{400, 10116, "max deliver is required to be > length of backoff values"}},
		{"unknown stream", "CONSUMER.CREATE.NOPE.p", `{"stream_name":"NOPE","config":{}}`,
			apiError{404, 10059, "stream not found"}},
		// Other consumer subjects.
		{"info with a body", "CONSUMER.INFO.ORDERS.p", `{"x":1}`, apiError{400, 10038, "expected an empty request payload"}},
		{"info of none", "CONSUMER.INFO.ORDERS.p", "", apiError{404, 10014, "consumer not found"}},
		{"info on an unknown stream", "CONSUMER.INFO.NOPE.p", "", apiError{404, 10059, "stream not found"}},
		{"delete of none", "CONSUMER.DELETE.ORDERS.p", "", apiError{404, 10014, "consumer not found"}},
		{"pause", "CONSUMER.PAUSE.ORDERS.p", `{}`, apiError{400, 10003, "bad request: CONSUMER.PAUSE is not supported by queen-bridge"}},
		{"pause on an unknown stream", "CONSUMER.PAUSE.NOPE.p", `{}`, apiError{404, 10059, "stream not found"}},
		// Stream management, KV, object store.
		{"stream create", "STREAM.CREATE.NEW", `{"name":"NEW"}`,
			apiError{400, 10003, "bad request: creating a stream through the API (streams are declared in QUEEN_JETSTREAM) is not supported by queen-bridge"}},
		{"stream update", "STREAM.UPDATE.ORDERS", `{"name":"ORDERS"}`,
			apiError{400, 10003, "bad request: STREAM.UPDATE (streams are declared in QUEEN_JETSTREAM; their messages are a Queen queue) is not supported by queen-bridge"}},
		{"stream delete", "STREAM.DELETE.ORDERS", "",
			apiError{400, 10003, "bad request: STREAM.DELETE (streams are declared in QUEEN_JETSTREAM; their messages are a Queen queue) is not supported by queen-bridge"}},
		{"stream purge", "STREAM.PURGE.ORDERS", "",
			apiError{400, 10003, "bad request: STREAM.PURGE (streams are declared in QUEEN_JETSTREAM; their messages are a Queen queue) is not supported by queen-bridge"}},
		{"purge of an unknown stream", "STREAM.PURGE.NOPE", "", apiError{404, 10059, "stream not found"}},
		{"message get", "STREAM.MSG.GET.ORDERS", `{"seq":1}`,
			apiError{400, 10003, "bad request: STREAM.MSG.GET (streams are declared in QUEEN_JETSTREAM; their messages are a Queen queue) is not supported by queen-bridge"}},
		{"a key-value bucket", "STREAM.INFO.KV_config", "", apiError{404, 10059, "stream not found"}},
		{"an object store", "STREAM.INFO.OBJ_files", "", apiError{404, 10059, "stream not found"}},
		{"stream info by subject", "STREAM.INFO.ORDERS", `{"subjects_filter":">"}`,
			apiError{400, 10003, "bad request: the state of each subject (subjects_filter) is not supported by queen-bridge"}},
		{"an API nobody serves", "SERVER.REMOVE", `{}`, apiError{400, 10003, "bad request: $JS." + h.api.cfg.Domain + ".API.SERVER.REMOVE is not supported by queen-bridge"}},
	}
	for _, c := range cases {
		got := apiAnswer(t, h.request(t, c.api, c.body))
		if got == nil || *got != c.want {
			t.Errorf("%s: %s answered %+v, want %+v", c.what, c.api, got, c.want)
		}
	}
	if n := len(h.engine.consumers); n != 0 {
		t.Errorf("a refused request reached the engine: %d tenants hold consumers", n)
	}
	if s := h.api.Stats(); s.Errors != uint64(len(cases)) || s.Requests != uint64(len(cases)) {
		t.Errorf("stats: %+v, want %d requests and as many errors", s, len(cases))
	}
}

// The engine's errors map to JetStream's: its typed errors to their
// codes, a configuration it refuses to the code it names, anything else
// to "temporarily unavailable".
func TestEngineErrorsMapToJetStreamCodes(t *testing.T) {
	h := newHarness(t, nil)
	cases := []struct {
		err  error
		want apiError
	}{
		{ErrConsumerExists, apiError{400, 10148, "consumer already exists"}},
		{ErrConsumerMissing, apiError{400, 10149, "consumer does not exist"}},
		{ErrTooManyConsumers, apiError{400, 10026, "maximum consumers limit reached"}},
		{&ConfigError{Code: 10094, Description: "by start sequence needs a filter that pins one partition"}, apiError{400, 10094, "by start sequence needs a filter that pins one partition"}},
		{errors.New("database down"), apiError{503, 10008, "JetStream system temporarily unavailable: database down"}},
	}
	for _, c := range cases {
		h.engine.mu.Lock()
		h.engine.failNext = c.err
		h.engine.mu.Unlock()
		got := apiAnswer(t, h.request(t, "CONSUMER.CREATE.ORDERS.p", createBody(`{"ack_policy":"explicit"}`)))
		if got == nil || *got != c.want {
			t.Errorf("%v: answered %+v, want %+v", c.err, got, c.want)
		}
	}
}

// A direct get is answered as nats-server answers one on a stream that
// does not allow it: no responders.
func TestDirectGetHearsNoResponders(t *testing.T) {
	h := newHarness(t, nil)
	inbox := "_INBOX.direct"
	if err := h.nc.PublishRequest(h.prefix+"DIRECT.GET.ORDERS", inbox, []byte(`{"seq":1}`)); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the 503 status", 10*time.Second, func() bool { return len(h.status.to(inbox)) == 1 })
	if got := h.status.to(inbox)[0]; got != "NATS/1.0 503\r\n\r\n" {
		t.Fatalf("direct get answered %q", got)
	}
}
