package publish

import (
	"context"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
)

// scriptedPusher answers each call with the next of its answers (then
// stores everything) and records what it was handed. Only the goroutine that calls push uses it.
type scriptedPusher struct {
	answers [][]jsonapi.Result // per call: one result per item; nil: refused as a whole
	calls   [][]string         // per call: the items' transactionIds
}

func (p *scriptedPusher) PushItems(_ context.Context, _ string, _ tenancy.TenantID, items []jsonapi.Item) (int, []jsonapi.Result) {
	var ids []string
	for _, it := range items {
		ids = append(ids, it.TransactionID)
	}
	p.calls = append(p.calls, ids)
	if len(p.answers) == 0 || len(p.calls) > 10 {
		return jsonapi.StatusCreated, make([]jsonapi.Result, len(items)) // beyond the script: all stored (no error)
	}
	rs := p.answers[0]
	p.answers = p.answers[1:]
	if rs == nil {
		return jsonapi.StatusServiceUnavailable, []jsonapi.Result{{Status: jsonapi.StatusFailed, Error: "busy"}}
	}
	status := jsonapi.StatusCreated
	for _, r := range rs {
		if r.Status == jsonapi.StatusFailed {
			status = jsonapi.StatusInternalServerError
		}
	}
	return status, rs
}

// A push tried again carries only what the last attempt did not store: a
// refused push all of it, a push with failed items those items, so that
// nothing stored is pushed again however long the failure lasts.
func TestPushTriesAgainWhatWasNotStored(t *testing.T) {
	ok := jsonapi.Result{Status: jsonapi.StatusQueued}
	buffered := jsonapi.Result{Status: jsonapi.StatusBuffered}
	failed := jsonapi.Result{Status: jsonapi.StatusFailed, Error: "write failed; spool full"}
	p := &scriptedPusher{answers: [][]jsonapi.Result{
		nil,                            // refused: nothing submitted
		{ok, failed, buffered, failed}, // a and c stored, b and d not
		{failed, ok},                   // d stored, b not
		{ok},                           // b stored
	}}
	s := &source{r: &Relay{cfg: Config{Push: p, Retry: time.Millisecond}}}
	items := []jsonapi.Item{{TransactionID: "a"}, {TransactionID: "b"}, {TransactionID: "c"}, {TransactionID: "d"}}
	if err := s.push(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"a", "b", "c", "d"}, {"a", "b", "c", "d"}, {"b", "d"}, {"b"}}
	if len(p.calls) != len(want) {
		t.Fatalf("calls %v, want %v", p.calls, want)
	}
	for i := range want {
		if len(p.calls[i]) != len(want[i]) {
			t.Fatalf("call %d pushed %v, want %v", i, p.calls[i], want[i])
		}
		for j := range want[i] {
			if p.calls[i][j] != want[i][j] {
				t.Fatalf("call %d pushed %v, want %v", i, p.calls[i], want[i])
			}
		}
	}
}
