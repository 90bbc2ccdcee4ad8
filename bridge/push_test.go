package bridge_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/internal/tenancy"
)

func TestEmptyItemsAnswersAtOnce(t *testing.T) {
	n := newNode(t, nodeOpts{})
	status, out := n.post("/api/v1/push", []byte(`{"items": []}`))
	if status != http.StatusCreated || string(out) != "[]" {
		t.Fatalf("HTTP: %d %s", status, out)
	}
	if msg := n.natsPush([]byte(`{"items":[]}`), ""); string(msg.Data) != "[]" || msg.Header.Get("Nats-Service-Error-Code") != "" {
		t.Fatalf("NATS: %s %v", msg.Data, msg.Header)
	}
}

func TestDefaults(t *testing.T) {
	n := newNode(t, nodeOpts{})
	rs := n.pushHTTP(`{"items":[{"queue":"orders.eu"}]}`)
	r := rs[0]
	if r.Status != "queued" || r.Partition != "Default" || r.Offset != 1 || r.Index != 0 || r.Queue != "orders.eu" {
		t.Fatalf("result %+v", r)
	}
	if _, err := uuid.Parse(r.MessageID); err != nil || r.TransactionID != r.MessageID {
		t.Fatalf("transactionId %q should default to the message id %q", r.TransactionID, r.MessageID)
	}
	if id := uuid.MustParse(r.MessageID); id.Version() != 7 {
		t.Fatalf("message id version %d, want 7", id.Version())
	}
	if r.CreatedAt == "" {
		t.Fatal("queued result without createdAt")
	}
	if got := storedPayload(t, n, "orders.eu", "Default", 1); string(got) != "null" {
		t.Fatalf("missing payload stored as %q, want null", got)
	}
}

func TestBadRequestsAreRejectedWholeAndWriteNothing(t *testing.T) {
	n := newNode(t, nodeOpts{})
	long := strings.Repeat("q", 256)
	cases := []struct{ body, want string }{
		{`not json`, "body is not JSON"},
		{`{"items": [}`, "body is not JSON"},
		{`[1,2]`, "JSON object with an items array"},
		{`{}`, "items is required"},
		{`{"items": {}}`, "items must be an array"},
		{`{"items": [1]}`, "items[0] must be an object"},
		{items(item("ok", "", ""), `{"partition":"p"}`), "items[1].queue is required"},
		{items(`{"queue": 5}`), "items[0].queue must be a string"},
		{items(`{"queue": ""}`), "items[0].queue must be 1..255 bytes"},
		{items(`{"queue": "` + long + `"}`), "items[0].queue must be 1..255 bytes"},
		{items(`{"queue": "a\u0001b"}`), "items[0].queue must not contain control characters"},
		{items(item("ok", "", ""), item("ok", "", ""), `{"queue":"q","partition":7}`), "items[2].partition must be a string"},
		{items(`{"queue":"q","partition":"` + long + `"}`), "items[0].partition must be 0..255 bytes"},
		{items(`{"queue":"q","transactionId":{}}`), "items[0].transactionId must be a string"},
		{items(`{"queue":"q","transactionId":"` + long + `"}`), "items[0].transactionId must be 0..255 bytes"},
		{items(`{"queue":"q","traceId":true}`), "items[0].traceId must be a string"},
		{items(`{"queue":"q","traceId":"` + long + `"}`), "items[0].traceId must be 0..255 bytes"},
		{`{"items": []} trailing`, "body is not JSON"},
		{items(item("ok", "", "")) + "\x00", "body is not JSON"},
		{items("{\"queue\":\"q\",\"payload\":\"caf\xe9\"}"), "items[0]: body is not JSON: invalid UTF-8 in a string"},
		{items(item("ok", "", ""), "{\"queue\":\"q\",\"payload\":{\"k\":[\"a\xc3\"]}}"), "items[1]: body is not JSON: invalid UTF-8"},
		{items("{\"queue\":\"q\",\"traceId\":\"\xed\xa0\x80\"}"), "items[0]: body is not JSON: invalid UTF-8"},
		{items(`{"queue":"a\ud800b"}`), "items[0].queue must not escape half of a UTF-16 surrogate pair"},
		{items(`{"queue":"q","partition":"\udc00"}`), "items[0].partition must not escape half of a UTF-16 surrogate pair"},
		{items(`{"queue":"q","transactionId":"x\ud83d"}`), "items[0].transactionId must not escape half"},
	}
	for _, tc := range cases {
		status, out := n.post("/api/v1/push", []byte(tc.body))
		if status != http.StatusBadRequest || !strings.Contains(string(out), tc.want) {
			t.Errorf("%s: HTTP %d %s, want 400 with %q", tc.body, status, out, tc.want)
		}
		msg := n.natsPush([]byte(tc.body), "")
		if msg.Header.Get("Nats-Service-Error-Code") != "400" || !strings.Contains(msg.Header.Get("Nats-Service-Error"), tc.want) {
			t.Errorf("%s: NATS headers %v body %s", tc.body, msg.Header, msg.Data)
		}
	}
	if c := n.count(`SELECT count(*) FROM queen.queues`); c != 0 {
		t.Fatalf("%d queues created by rejected requests", c)
	}
}

func TestBodyLimit(t *testing.T) {
	n := newNode(t, nodeOpts{maxBody: 1024})
	big := items(`{"queue":"q","payload":"` + strings.Repeat("x", 2000) + `"}`)
	if status, out := n.post("/api/v1/push", []byte(big)); status != http.StatusRequestEntityTooLarge {
		t.Fatalf("HTTP %d %s, want 413", status, out)
	}
	if msg := n.natsPush([]byte(big), ""); msg.Header.Get("Nats-Service-Error-Code") != "413" {
		t.Fatalf("NATS %v", msg.Header)
	}
}

func TestResultsInRequestOrder(t *testing.T) {
	n := newNode(t, nodeOpts{})
	rs := n.pushHTTP(items(item("b", "p2", "x1"), item("a", "p1", "x2"), item("b", "p2", "x3"), item("a", "p9", "x4"), item("b", "p2", "x5")))
	wantTx := []string{"x1", "x2", "x3", "x4", "x5"}
	wantOff := []int64{1, 1, 2, 1, 3}
	for i, r := range rs {
		if r.Index != i || r.TransactionID != wantTx[i] || r.Offset != wantOff[i] || r.Status != "queued" {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
}

func TestDuplicates(t *testing.T) {
	n := newNode(t, nodeOpts{})
	// the same request: the follower copies the leader
	rs := n.pushHTTP(items(item("q", "p", "t1"), item("q", "p", "t2"), item("q", "p", "t1")))
	if rs[0].Status != "queued" || rs[2].Status != "duplicate" || rs[2].MessageID != rs[0].MessageID || rs[2].Offset != rs[0].Offset {
		t.Fatalf("same request: %+v", rs)
	}
	// a later request
	later := n.pushHTTP(items(item("q", "p", "t2")))
	if later[0].Status != "duplicate" || later[0].MessageID != rs[1].MessageID || later[0].Offset != 2 {
		t.Fatalf("later request: %+v, original %+v", later[0], rs[1])
	}
	// another partition, and another tenant, are not duplicates
	if r := n.pushHTTP(items(item("q", "other", "t1")))[0]; r.Status != "queued" {
		t.Fatalf("other partition: %+v", r)
	}
	tenant := uuid.New()
	msg := n.natsPush([]byte(items(item("q", "p", "t1"))), "."+tenant.String())
	if r := decodeResults(t, msg.Data)[0]; r.Status != "queued" || r.Offset != 1 {
		t.Fatalf("other tenant: %+v", r)
	}
	// a follower whose leader is itself a stored duplicate reports the original
	rs2 := n.pushHTTP(items(item("q", "p", "t2"), item("q", "p", "t2")))
	for _, r := range rs2 {
		if r.Status != "duplicate" || r.MessageID != rs[1].MessageID {
			t.Fatalf("follower of a duplicate: %+v", rs2)
		}
	}
}

func TestWindowZeroViaConfigure(t *testing.T) {
	n := newNode(t, nodeOpts{})
	status, out := n.post("/api/v1/configure", []byte(`{"queue":"w0.task","options":{"dedupWindowSeconds":0}}`))
	if status != http.StatusOK {
		t.Fatalf("configure: %d %s", status, out)
	}
	var cfg struct {
		Queue, Tenant, Namespace, Task string
		Options                        map[string]any
	}
	if err := json.Unmarshal(out, &cfg); err != nil || cfg.Namespace != "w0" || cfg.Task != "task" || cfg.Options["dedupWindowSeconds"] != 0.0 ||
		cfg.Options["encryptionEnabled"] != false || cfg.Options["retentionSeconds"] != 0.0 || cfg.Tenant != uuid.Nil.String() {
		t.Fatalf("configure answer %s (%v)", out, err)
	}
	n.pushHTTP(items(item("w0.task", "p", "t1")))
	if r := n.pushHTTP(items(item("w0.task", "p", "t1")))[0]; r.Status != "queued" || r.Offset != 2 {
		t.Fatalf("window 0: a repeat in a later request is written again: %+v", r)
	}
	rs := n.pushHTTP(items(item("w0.task", "p", "t9"), item("w0.task", "p", "t9")))
	if rs[1].Status != "duplicate" {
		t.Fatalf("window 0: a repeat inside one request is still a duplicate: %+v", rs)
	}
	// options left out keep their value
	_, out = n.post("/api/v1/configure", []byte(`{"queue":"w0.task","options":{"retentionSeconds":30}}`))
	if !strings.Contains(string(out), `"dedupWindowSeconds":0`) || !strings.Contains(string(out), `"retentionSeconds":30`) {
		t.Fatalf("partial configure: %s", out)
	}
	for body, want := range map[string]string{
		`{"options":{}}`: "queue is required",
		`{"queue":"q","options":{"dedupWindowSeconds":-1}}`:  "dedupWindowSeconds must be >= 0",
		`{"queue":"q","options":{"encryptionEnabled":true}}`: "QUEEN_ENCRYPTION_KEY",
		`{"queue":"q","options":{"dedupWindowSeconds":"x"}}`: "options.dedupWindowSeconds",
	} {
		if status, out := n.post("/api/v1/configure", []byte(body)); status != http.StatusBadRequest || !strings.Contains(string(out), want) {
			t.Errorf("%s: %d %s", body, status, out)
		}
	}
}

func TestHTTPAndNATSAnswerAlike(t *testing.T) {
	n := newNode(t, nodeOpts{})
	body := func(q string) []byte {
		return []byte(items(item(q, "p", "a"), item(q, "", "b"), item(q, "p", "a"), `{"queue":"`+q+`","traceId":"tr","transactionId":"c"}`))
	}
	_, httpOut := n.post("/api/v1/push", body("via-http"))
	natsOut := n.natsPush(body("via-nats"), "").Data
	norm := func(out []byte, q string) string {
		rs := decodeResults(t, out)
		for i := range rs {
			rs[i].MessageID, rs[i].CreatedAt = "", ""
			if rs[i].Queue != q {
				t.Fatalf("queue %q", rs[i].Queue)
			}
			rs[i].Queue = ""
		}
		b, _ := json.Marshal(rs)
		return string(b)
	}
	if h, m := norm(httpOut, "via-http"), norm(natsOut, "via-nats"); h != m {
		t.Fatalf("HTTP and NATS differ:\n%s\n%s", h, m)
	}
}

func TestBearerTokensSelectTheTenant(t *testing.T) {
	tenant := uuid.New()
	n := newNode(t, nodeOpts{tokens: map[string]tenancy.TenantID{"s3cret": tenancy.TenantID(tenant)}})
	if status, _ := n.post("/api/v1/push", []byte(items(item("q", "p", "a")))); status != http.StatusUnauthorized {
		t.Fatalf("no token: %d", status)
	}
	status, out := n.post("/api/v1/push", []byte(items(item("q", "p", "a"))), "Authorization", "Bearer s3cret")
	if status != http.StatusCreated {
		t.Fatalf("with token: %d %s", status, out)
	}
	if c := n.count(`SELECT count(*) FROM queen.queues WHERE tenant = $1`, tenant); c != 1 {
		t.Fatalf("the token's tenant has %d queues", c)
	}
}

// A window raised through configure covers what was written before it:
// a repeat of a message pushed at window 0 is a duplicate once the window is
// 60 s.
func TestWindowGrowthViaConfigure(t *testing.T) {
	n := newNode(t, nodeOpts{})
	if status, out := n.post("/api/v1/configure", []byte(`{"queue":"grow","options":{"dedupWindowSeconds":0}}`)); status != http.StatusOK {
		t.Fatalf("configure: %d %s", status, out)
	}
	first := n.pushHTTP(items(item("grow", "p", "a")))[0]
	if status, out := n.post("/api/v1/configure", []byte(`{"queue":"grow","options":{"dedupWindowSeconds":60}}`)); status != http.StatusOK {
		t.Fatalf("configure: %d %s", status, out)
	}
	n.pushHTTP(items(item("grow", "p", "b")))
	if r := n.pushHTTP(items(item("grow", "p", "a")))[0]; r.Status != "duplicate" || r.MessageID != first.MessageID {
		t.Fatalf("repeat after the window grew: %+v, original %+v", r, first)
	}
}
