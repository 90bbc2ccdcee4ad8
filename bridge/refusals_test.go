package bridge_test

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/jsonapi"
)

// counted reads a counter of the node's exposition; 0 while a labelled
// counter has not been touched yet (it is not exposed then).
func counted(t *testing.T, n *node, name string) float64 {
	t.Helper()
	v, _ := exposed(t, n, name)
	return v
}

// Every route answers a request that does not decode with 400 and the
// decoder's own words, byte for byte, over HTTP and NATS; nothing is
// written, and the refusals are counted where the room would have counted
// the request (pushes by transport, transactions as refused).
func TestRequestsThatDoNotDecodeAreAnsweredWithTheDecodersWords(t *testing.T) {
	n := newNode(t, nodeOpts{})
	refusal := func(_ any, err error) []byte {
		t.Helper()
		if err == nil {
			t.Fatal("the case's body decodes")
		}
		return jsonapi.AppendError(nil, err.Error())
	}
	sw := func(err error) []byte { return refusal(nil, err) }
	_, switchErr := jsonapi.DecodeSwitch([]byte(`{}`))
	big := `{"items":[` + strings.Repeat(" ", 70<<10) + `}` // past the inline bound: decoded on a worker
	q := url.Values{"queue": {"q"}, "limit": {"many"}}

	httpCases := []struct {
		method, path, body string
		want               []byte
	}{
		{"POST", "/api/v1/push", `not json`, refusal(jsonapi.DecodePush([]byte(`not json`)))},
		{"POST", "/api/v1/configure", `{"queue":`, refusal(jsonapi.DecodeConfigure([]byte(`{"queue":`)))},
		{"POST", "/api/v1/ack", `[]`, refusal(jsonapi.DecodeAck([]byte(`[]`), false))},
		{"POST", "/api/v1/ack/batch", `{}`, refusal(jsonapi.DecodeAck([]byte(`{}`), true))},
		{"POST", "/api/v1/lease/not-a-lease/extend", `{}`, refusal(jsonapi.DecodeLease("not-a-lease", []byte(`{}`)))},
		{"GET", "/api/v1/dlq?" + q.Encode(), "", refusal(jsonapi.ParseDeadLettersQuery(q.Get))},
		{"POST", "/api/v1/dlq/requeue", `{"queue":5}`, refusal(jsonapi.DecodeRequeue([]byte(`{"queue":5}`)))},
		{"POST", "/api/v1/system/maintenance", `{}`, sw(switchErr)},
		{"POST", "/api/v1/system/maintenance/pop", `{}`, sw(switchErr)},
		{"POST", "/api/v1/transaction", `{"operations":[]}`, refusal(jsonapi.DecodeTransaction([]byte(`{"operations":[]}`), 10000))},
	}
	natsCases := []struct {
		subject, body string
		want          []byte
	}{
		{"push", `not json`, refusal(jsonapi.DecodePush([]byte(`not json`)))},
		{"push", big, refusal(jsonapi.DecodePush([]byte(big)))},
		{"configure", `{"queue":`, refusal(jsonapi.DecodeConfigure([]byte(`{"queue":`)))},
		{"maintenance", `[`, refusal(jsonapi.DecodeMaintenance([]byte(`[`)))},
		{"ack", `[]`, refusal(jsonapi.DecodeAnyAck([]byte(`[]`)))},
		{"lease", `{"leaseId":"x"}`, refusal(jsonapi.DecodeLease("", []byte(`{"leaseId":"x"}`)))},
		{"dlq", `{"limit":"x"}`, refusal(jsonapi.DecodeDeadLetters([]byte(`{"limit":"x"}`)))},
		{"transaction", `{"operations":[]}`, refusal(jsonapi.DecodeTransaction([]byte(`{"operations":[]}`), 10000))},
	}

	pushesHTTP := counted(t, n, `queen_push_requests_total{transport="http"}`)
	pushesNATS := counted(t, n, `queen_push_requests_total{transport="nats"}`)
	refused := counted(t, n, `queen_transactions_total{outcome="refused"}`)
	for _, c := range httpCases {
		var body []byte
		if c.body != "" {
			body = []byte(c.body)
		}
		status, out := n.call(c.method, c.path, body)
		if status != http.StatusBadRequest || !bytes.Equal(out, c.want) {
			t.Errorf("HTTP %s %s: %d %s; want 400 %s", c.method, c.path, status, out, c.want)
		}
	}
	for _, c := range natsCases {
		msg, err := n.nc.Request(n.prefix+".v1."+c.subject, []byte(c.body), 30*time.Second)
		if err != nil {
			t.Fatalf("NATS %s: %v", c.subject, err)
		}
		if msg.Header.Get("Nats-Service-Error-Code") != "400" || !bytes.Equal(msg.Data, c.want) ||
			msg.Header.Get("Nats-Service-Error") != jsonapi.DecodeError(c.want) {
			t.Errorf("NATS %s: %v %s; want 400 %s", c.subject, msg.Header, msg.Data, c.want)
		}
	}
	if d := counted(t, n, `queen_push_requests_total{transport="http"}`) - pushesHTTP; d != 1 {
		t.Errorf("HTTP push requests counted %v more; want 1", d)
	}
	if d := counted(t, n, `queen_push_requests_total{transport="nats"}`) - pushesNATS; d != 2 {
		t.Errorf("NATS push requests counted %v more; want 2", d)
	}
	if d := counted(t, n, `queen_transactions_total{outcome="refused"}`) - refused; d != 2 {
		t.Errorf("refused transactions counted %v more; want 2", d)
	}
	if c := n.count(`SELECT count(*) FROM queen.queues`); c != 0 {
		t.Errorf("%d queues written by refused requests", c)
	}
	var m struct{ MaintenanceMode, PopMaintenanceMode bool }
	n.callJSON("GET", "/api/v1/system/maintenance", nil, &m)
	if m.MaintenanceMode || m.PopMaintenanceMode {
		t.Errorf("a refused switch turned maintenance on: %+v", m)
	}
}
