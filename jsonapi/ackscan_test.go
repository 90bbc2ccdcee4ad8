package jsonapi

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// The acknowledgement scanner (ackscan.go) against encoding/json's reading
// (decodeAckJSON): what it reads it reads the same, to the error text, and
// the bodies clients send it reads itself.

// ackRoutes are the three readings of a body: the scanner's, and the
// encoding/json one it is held to.
var ackRoutes = []struct {
	name  string
	route ackRoute
	json  func([]byte) ([]Ack, error)
}{
	{"single", routeSingle, func(b []byte) ([]Ack, error) { return decodeAckJSON(b, false) }},
	{"batch", routeBatch, func(b []byte) ([]Ack, error) { return decodeAckJSON(b, true) }},
	{"either", routeEither, decodeAnyAckJSON},
}

// sameAsJSON checks every route's scanner reading of body against
// encoding/json's, and reports whether the scanner read it (per route).
func sameAsJSON(t *testing.T, body []byte) (scanned [3]bool) {
	t.Helper()
	for k, r := range ackRoutes {
		got, ok, err := scanAcks(body, r.route)
		scanned[k] = ok
		if !ok {
			continue
		}
		want, wantErr := r.json(body)
		if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Fatalf("%q (%s): the scanner says %v, encoding/json %v", body, r.name, err, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q (%s): the scanner reads %+v, encoding/json %+v", body, r.name, got, want)
		}
	}
	return scanned
}

// clientAckBodies are acknowledgements as clients send them: the scanner
// reads each on every route that takes its shape.
var clientAckBodies = []struct {
	name  string
	body  string
	batch bool
}{
	{"queen-bench", string(ackBatchBody(100)), true},
	{"go-client", mustMarshal(map[string]any{"consumerGroup": "billing", "acknowledgments": []map[string]string{
		{"transactionId": "order-<1>&", "partitionId": "7", "status": "failed", "leaseId": uuidAText, "error": "it said \"no\"\n"},
		{"transactionId": "order-2", "partitionId": "7", "status": "failed", "leaseId": uuidAText, "error": "it said \"no\"\n"},
	}}), true},
	{"numbers-and-nulls", `{"acknowledgments":[{"transactionId":"a","partitionId":12,"leaseId":null,"error":null,"status":"completed","consumerGroup":null},` +
		`{"partitionId":-0,"transactionId":"b"},{"transactionId":"c","partitionId":"x","extra":{"deep":[1,2,{"a":null}]}}],"consumerGroup":"g","other":true}`, true},
	{"unicode", `{"consumerGroup":"grüße","acknowledgments":[{"transactionId":"ид-1 \ud83d\ude00 \ud800","partitionId":" 3 ","status":"dlq","error":"x\u2028y"}]}`, true},
	{"bad-status", `{"acknowledgments":[{"transactionId":"a","partitionId":1},{"transactionId":"b","partitionId":1,"status":"ok"}]}`, true},
	{"bad-group", `{"acknowledgments":[{"transactionId":"a","partitionId":1,"consumerGroup":"g\u0000"}]}`, true},
	{"bad-lease", `{"acknowledgments":[{"transactionId":"a","partitionId":1,"leaseId":"0123"}]}`, true},
	{"empty", `{"acknowledgments":[]}`, true},
	{"single", `{"transactionId":"t-1","partitionId":"17","leaseId":"` + uuidBText + `","status":"success","consumerGroup":"g"}`, false},
	{"single-errors", `{"transactionId":"","partitionId":17}`, false},
	{"single-empty", ` { } `, false},
}

func mustMarshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestScanAcksReadsClientBodies(t *testing.T) {
	t.Parallel()
	for _, c := range clientAckBodies {
		scanned := sameAsJSON(t, []byte(c.body))
		// The single route reads any object; the batch route needs the array.
		if !scanned[0] || scanned[1] != c.batch || !scanned[2] {
			t.Errorf("%s: scanned on the single, batch and either route: %v", c.name, scanned)
		}
	}
	// The body of a typical batch is read by the scanner, on both routes
	// that take it, as 100 acknowledgements.
	body := ackBatchBody(100)
	for _, route := range []ackRoute{routeBatch, routeEither} {
		acks, ok, err := scanAcks(body, route)
		if !ok || err != nil || len(acks) != 100 {
			t.Fatalf("route %d: %d acknowledgements, scanned %v, %v", route, len(acks), ok, err)
		}
		if a := acks[99]; a.TransactionID != "run-1-2-99" || a.PartitionID != 1001 || a.ConsumerGroup != "bench-group" || a.Status != "completed" ||
			a.LeaseID != "0198f0a4-7c1e-7b2a-9d3e-000000000063" || a.Lease == nil || a.Lease[15] != 0x63 {
			t.Errorf("the last acknowledgement read as %+v", a)
		}
	}
}

// TestScanAcksGivesUp: what the scanner is not sure of it leaves to
// encoding/json, on every route that reads it. (The single route skips
// "acknowledgments", whatever it holds.)
func TestScanAcksGivesUp(t *testing.T) {
	t.Parallel()
	item := `{"transactionId":"a","partitionId":1}`
	everyRoute := []string{
		// Not an object, not JSON, not all of it JSON.
		`null`, `[]`, `"x"`, `5`, ``, `{`, `{"acknowledgments":[` + item + `]} x`, `{"acknowledgments":[` + item + `],}`,
		// Names encoding/json might match.
		`{"ACKNOWLEDGMENTS":[` + item + `]}`, `{"acKnowledgments":[]}`, `{"ac\u212anowledgments":[]}`, "{\"ac\u212anowledgments\":[]}",
		"{\"acknowledgment\u017f\":[]}", `{"acknowledgments":[],"consumergroup":"g"}`, `{"transactionID":"a","partitionId":1}`,
		`{"ackn\u006fwledgments":[]}`, `{"x\u0041":1,"acknowledgments":[]}`,
		// Members twice.
		`{"acknowledgments":[],"consumerGroup":"a","consumerGroup":"b"}`, `{"transactionId":"a","partitionId":1,"transactionId":null}`,
		// Values of another type.
		`{"acknowledgments":[],"consumerGroup":5}`, `{"transactionId":5,"partitionId":1}`, `{"transactionId":"a","partitionId":1.5}`,
		`{"transactionId":"a","partitionId":{}}`,
		// Text that is not UTF-8.
		"{\"acknowledgments\":[],\"x\":\"\xc0\"}", "{\"acknowledgments\":[{\"transactionId\":\"a\xff\",\"partitionId\":1}]}", "{\"acknowledgments\":[],\"\xed\xa0\x80\":1}",
	}
	batchRoutes := []string{
		`{"acknowledgments":[{"TransactionId":"a","partitionId":1}]}`,
		`{"acknowledgments":[` + strings.Replace(item, "partitionId", "partitionID", 1) + `]}`,
		`{"acknowledgments":[],"acknowledgments":[]}`,
		`{"acknowledgments":[{"transactionId":"a","partitionId":1,"transactionId":null}]}`,
		`{"acknowledgments":[{"transactionId":"a","partitionId":1,"partitionId":2}]}`,
		`{"acknowledgments":null}`, `{"acknowledgments":{}}`, `{"acknowledgments":[null]}`, `{"acknowledgments":[1]}`,
		`{"acknowledgments":[{"transactionId":5,"partitionId":1}]}`,
		`{"acknowledgments":[{"transactionId":"a","partitionId":1,"status":true}]}`,
		`{"acknowledgments":[{"transactionId":"a","partitionId":1.5}]}`, `{"acknowledgments":[{"transactionId":"a","partitionId":1e3}]}`,
		`{"acknowledgments":[{"transactionId":"a","partitionId":[1]}]}`, `{"acknowledgments":[{"transactionId":"a","partitionId":true}]}`,
	}
	for _, body := range everyRoute {
		if scanned := sameAsJSON(t, []byte(body)); scanned != [3]bool{} {
			t.Errorf("%q: scanned on the single, batch and either route: %v", body, scanned)
		}
	}
	for _, body := range batchRoutes {
		if scanned := sameAsJSON(t, []byte(body)); scanned != [3]bool{true, false, false} {
			t.Errorf("%q: scanned on the single, batch and either route: %v", body, scanned)
		}
	}
	// The batch route needs the array; the others read the body as one.
	if scanned := sameAsJSON(t, []byte(item)); scanned != [3]bool{true, false, true} {
		t.Errorf("%s: scanned on the single, batch and either route: %v", item, scanned)
	}
}

// TestScanAcksDepth: the scanner never takes nesting that encoding/json
// refuses (10,001 levels), at the body's level or an acknowledgement's.
func TestScanAcksDepth(t *testing.T) {
	t.Parallel()
	for _, levels := range []int{9996, 9997, 9998, 9999, 10000, 10001} {
		for _, around := range []struct {
			open, close string
			outer       int // the levels around the value
		}{
			{`{"acknowledgments":[],"x":`, `}`, 1},
			{`{"acknowledgments":[{"transactionId":"a","partitionId":1,"x":`, `}]}`, 3},
			{`{"acknowledgments":[{"transactionId":"a","partitionId":1,"x":`, `,"y":1}]}`, 3},
		} {
			for _, inner := range []string{"", "0"} {
				n := levels - around.outer
				body := around.open + strings.Repeat("[", n) + inner + strings.Repeat("]", n) + around.close
				scanned := sameAsJSON(t, []byte(body))
				_, jsonErr := decodeAckJSON([]byte(body), true)
				if tooDeep := jsonErr != nil && strings.Contains(jsonErr.Error(), "exceeded max depth"); tooDeep != (levels > 10000) || tooDeep && scanned != [3]bool{} {
					t.Errorf("%d levels: scanned %v, encoding/json says %v", levels, scanned, jsonErr)
				}
			}
		}
	}
}

// TestDecodeAckScanned: the routes answer the test bodies as encoding/json
// reads them.
func TestDecodeAckScanned(t *testing.T) {
	t.Parallel()
	for _, c := range ackBodies {
		sameAsJSON(t, []byte(c.body))
	}
}
