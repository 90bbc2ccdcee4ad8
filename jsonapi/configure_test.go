package jsonapi

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// Configure: the request body, and the queue's settings as the answer and the
// queue.changed broadcast carry them, both ways.

func TestDecodeConfigure(t *testing.T) {
	t.Parallel()
	yes, zero, sixty := true, int32(0), int32(60)
	for _, c := range []struct {
		body string
		want ConfigureRequest
		err  string
	}{
		{body: `{"queue":"orders"}`, want: ConfigureRequest{Queue: "orders"}},
		{body: `{"queue":"orders.eu.x","namespace":"orders","task":"eu","options":null}`, want: ConfigureRequest{Queue: "orders.eu.x"}},
		{body: `{"queue":"orders","namespace":"","task":""}`, want: ConfigureRequest{Queue: "orders"}},
		{body: `{"queue":"q","options":{"encryptionEnabled":true,"dedupWindowSeconds":60,"retentionSeconds":0}}`,
			want: ConfigureRequest{Queue: "q", EncryptionEnabled: &yes, DedupWindowSeconds: &sixty, RetentionSeconds: &zero}},
		{body: `{"queue":"q","options":{"encryptionEnabled":null}}`, want: ConfigureRequest{Queue: "q"}},
		// Options this service does not act on are kept as sent, exactly named.
		{body: `{"queue":"q","options":{"leaseTime": 30 ,"retryLimit":5,"x":{"y":[1,"z"]},"EncryptionEnabled":false}}`,
			want: ConfigureRequest{Queue: "q", Other: map[string]json.RawMessage{
				"leaseTime": json.RawMessage(`30`), "retryLimit": json.RawMessage(`5`), "x": json.RawMessage(`{"y":[1,"z"]}`),
				"EncryptionEnabled": json.RawMessage(`false`)}}},

		{body: `{}`, err: "queue is required"},
		{body: `{"queue":null}`, err: "queue is required"},
		{body: `{"queue":""}`, err: "queue must be 1..255 bytes, got 0"},
		{body: `{"queue":"` + strings.Repeat("q", 256) + `"}`, err: "queue must be 1..255 bytes, got 256"},
		{body: `{"queue":"q\u0007"}`, err: "queue must not contain control characters"},
		{body: `{"queue":"orders.eu","namespace":"billing"}`,
			err: `namespace "billing" does not match queue "orders.eu": this service takes the namespace from the queue name ("orders")`},
		{body: `{"queue":"orders.eu","task":"us"}`,
			err: `task "us" does not match queue "orders.eu": this service takes the task from the queue name ("eu")`},
		{body: `{"queue":"orders","task":"eu"}`,
			err: `task "eu" does not match queue "orders": this service takes the task from the queue name ("")`},
		{body: `{"queue":"orders.eu","namespace":"orders.eu"}`,
			err: `namespace "orders.eu" does not match queue "orders.eu": this service takes the namespace from the queue name ("orders")`},
		{body: `{"queue":"q","options":{"dedupWindowSeconds":-1}}`, err: "options.dedupWindowSeconds must be >= 0"},
		{body: `{"queue":"q","options":{"retentionSeconds":-86400}}`, err: "options.retentionSeconds must be >= 0"},
		{body: `{"queue":"q","options":{"encryptionEnabled":"yes"}}`, err: "options.encryptionEnabled: json: cannot unmarshal string into Go value of type bool"},
		{body: `{"queue":"q","options":{"dedupWindowSeconds":2147483648}}`, err: "options.dedupWindowSeconds: json: cannot unmarshal number 2147483648 into Go value of type int32"},
		{body: `{"queue":"q","options":{"retentionSeconds":1.5}}`, err: "options.retentionSeconds: json: cannot unmarshal number 1.5 into Go value of type int32"},
		{body: `{"queue":"q","options":{"retentionEnabled":true,"maxWaitTimeSeconds":10}}`,
			want: ConfigureRequest{Queue: "q", Other: map[string]json.RawMessage{
				"retentionEnabled": json.RawMessage(`true`), "maxWaitTimeSeconds": json.RawMessage(`10`)}}},
		{body: `{"queue":"q","options":{"retentionEnabled":"yes"}}`, err: `options.retentionEnabled must be true or false, got "yes"`},
		{body: `{"queue":"q","options":{"maxWaitTimeSeconds":-1}}`, err: "options.maxWaitTimeSeconds must be a whole number of seconds from 0 to 2147483647, got -1"},
		{body: `{"queue":"q","options":{"maxWaitTimeSeconds":1.5}}`, err: "options.maxWaitTimeSeconds must be a whole number of seconds from 0 to 2147483647, got 1.5"},
		{body: `{"queue":"q","options":{"maxWaitTimeSeconds":"15"}}`, err: `options.maxWaitTimeSeconds must be a whole number of seconds from 0 to 2147483647, got "15"`},
		// Several bad options: the first by name, every time.
		{body: `{"queue":"q","options":{"retentionSeconds":"a","encryptionEnabled":"b","dedupWindowSeconds":"c"}}`,
			err: "options.dedupWindowSeconds: json: cannot unmarshal string into Go value of type int32"},
		{body: `{"queue":"q","options":[]}`, err: "configure body: json: cannot unmarshal array into Go struct field .options of type map[string]json.RawMessage"},
		{body: `{"queue":5}`, err: "configure body: json: cannot unmarshal number into Go struct field .queue of type string"},
		{body: `queue=q`, err: "configure body: invalid character 'q' looking for beginning of value"},
		{body: ``, err: "configure body: unexpected end of JSON input"},
	} {
		for range 10 { // map order must not decide which error is said
			got, err := DecodeConfigure([]byte(c.body))
			wantBad(t, err, c.err)
			if c.err == "" && !reflect.DeepEqual(got, c.want) {
				t.Fatalf("%s:\n got %+v\nwant %+v", c.body, got, c.want)
			}
		}
	}
}

func TestAppendQueueConfigured(t *testing.T) {
	t.Parallel()
	c := QueueConfigured{Configured: true, Queue: "orders.eu", Tenant: uuidAText, Namespace: "orders", Task: "eu",
		Options: QueueOptions{EncryptionEnabled: true, DedupWindowSeconds: 600, RetentionSeconds: 0,
			Other: map[string]json.RawMessage{"leaseTime": json.RawMessage(`30`), "x": json.RawMessage(`{"a":"<&>"}`),
				// An option named as an acted-on one loses to it.
				"dedupWindowSeconds": json.RawMessage(`1`)}},
		NotActedOn: []string{"x"}}
	out, err := AppendQueueConfigured(nil, &c)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, out, `{"configured":true,"queue":"orders.eu","tenant":"01234567-89ab-cdef-0123-456789abcdef","namespace":"orders","task":"eu",`+
		`"options":{"dedupWindowSeconds":600,"encryptionEnabled":true,"leaseTime":30,"retentionSeconds":0,"x":{"a":"\u003c\u0026\u003e"}},`+
		`"notActedOn":["x"]}`)

	out, err = AppendQueueConfigured(nil, &QueueConfigured{Configured: true, Queue: nasty})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, out, `{"configured":true,"queue":"a\"b\\c\nd\re\tf\u0001g\u001f`+"\x7f"+`h\ufffdé","tenant":"","namespace":"","task":"",`+
		`"options":{"dedupWindowSeconds":0,"encryptionEnabled":false,"retentionSeconds":0},"notActedOn":null}`)

	_, err = AppendQueueConfigured(nil, &QueueConfigured{Queue: "q", Options: QueueOptions{Other: map[string]json.RawMessage{"x": json.RawMessage(`{`)}}})
	if err == nil || !strings.HasPrefix(err.Error(), `queue "q": its settings do not encode: `) {
		t.Fatalf("an option that is not JSON: %v", err)
	}
}

func TestDecodeQueueConfigured(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		body string
		want QueueConfigured
		err  string
	}{
		{body: `{"configured":true,"queue":"orders.eu","tenant":"t","namespace":"orders","task":"eu",` +
			`"options":{"dedupWindowSeconds":600,"encryptionEnabled":true,"leaseTime":30,"retentionSeconds":5},"notActedOn":[]}`,
			want: QueueConfigured{Configured: true, Queue: "orders.eu", Tenant: "t", Namespace: "orders", Task: "eu",
				Options:    QueueOptions{EncryptionEnabled: true, DedupWindowSeconds: 600, RetentionSeconds: 5, Other: map[string]json.RawMessage{"leaseTime": json.RawMessage(`30`)}},
				NotActedOn: []string{}}},
		// Options kept as sent whose names differ from the acted-on ones
		// only in case stay options kept as sent: they never overrule them.
		{body: `{"queue":"q","options":{"encryptionEnabled":true,"encryptionenabled":false,"retentionSeconds":7,"RETENTIONSECONDS":"x","dedupwindowseconds":1}}`,
			want: QueueConfigured{Queue: "q", Options: QueueOptions{EncryptionEnabled: true, RetentionSeconds: 7, Other: map[string]json.RawMessage{
				"encryptionenabled": json.RawMessage(`false`), "RETENTIONSECONDS": json.RawMessage(`"x"`), "dedupwindowseconds": json.RawMessage(`1`)}}}},
		{body: `{"queue":"q","options":{"encryptionEnabled":"yes"}}`, err: "options.encryptionEnabled: json: cannot unmarshal string into Go value of type bool"},
		{body: `{"queue":"q","options":[]}`, err: "json: cannot unmarshal array into Go struct field QueueConfigured.options of type map[string]json.RawMessage"},
		{body: `{`, err: "unexpected end of JSON input"},
	} {
		got, err := DecodeQueueConfigured([]byte(c.body))
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%s: error %v, want %s", c.body, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v (%v)\nwant %+v", c.body, got, err, c.want)
		}
	}
}

// What one bridge broadcasts, its peers read back: the acted-on options
// exactly, whatever the options kept as sent are named.
func TestQueueConfiguredRoundTrip(t *testing.T) {
	t.Parallel()
	for _, other := range []map[string]json.RawMessage{
		nil,
		{"leaseTime": json.RawMessage(`300`), "retryLimit": json.RawMessage(`3`)},
		{"encryptionenabled": json.RawMessage(`false`), "Encryptionenabled": json.RawMessage(`false`)},
		{"dedupwindowseconds": json.RawMessage(`999`), "retentionseconds": json.RawMessage(`"not a number"`)},
	} {
		c := QueueConfigured{Configured: true, Queue: "orders.eu", Tenant: uuidAText, Namespace: "orders", Task: "eu",
			Options: QueueOptions{EncryptionEnabled: true, DedupWindowSeconds: 600, RetentionSeconds: 86400, Other: other}, NotActedOn: []string{}}
		out, err := AppendQueueConfigured(nil, &c)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeQueueConfigured(out)
		if err != nil {
			t.Fatalf("%s does not read back: %v", out, err)
		}
		if len(back.Options.Other) == 0 && len(other) == 0 {
			back.Options.Other = other
		}
		if !reflect.DeepEqual(back, c) {
			t.Fatalf("%s reads back as\n%+v, want\n%+v", out, back, c)
		}
	}
}
