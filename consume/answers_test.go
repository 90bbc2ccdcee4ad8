package consume

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/cursors"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
)

type popAnswer struct {
	Queue, Partition, PartitionID, LeaseID, ConsumerGroup string
	PartitionsClaimed                                     int
	Messages                                              []struct {
		ID, TransactionID, Partition, PartitionID, LeaseID, ConsumerGroup string
		Data                                                              json.RawMessage
	}
}

func decode[T any](t *testing.T, body []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return v
}

func TestServePopWithNothingIsNoContent(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.store.popByKey["p"] = answers(pgwire.PopEmpty, 1, "p")
	status, body := r.c.ServePop(context.Background(), tenant, jsonapi.PopRequest{Queue: "q", Partition: "p"}, 0)
	if status != jsonapi.StatusNoContent || body != nil {
		t.Errorf("%d %s", status, body)
	}
	r.maint.Store(true)
	r.store.popByKey["p"] = delivers(1, "p", 1, 10)
	status, body = r.c.ServePop(context.Background(), tenant, jsonapi.PopRequest{Queue: "q", Partition: "p"}, 0)
	if status != jsonapi.StatusNoContent || body != nil {
		t.Errorf("in maintenance: %d %s", status, body)
	}
	if n := len(r.store.popCalls()); n != 1 {
		t.Errorf("%d claims; want none in maintenance", n)
	}
}

func TestServePopAnswersWithTheLease(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.marks.cands = []cursors.Candidate{{ID: 1, Name: "a"}, {ID: 2, Name: "b"}}
	r.store.popByID[1] = delivers(1, "a", 2, 10)
	r.store.popByID[2] = delivers(2, "b", 1, 10)
	status, body := r.c.ServePop(context.Background(), tenant,
		jsonapi.PopRequest{Queue: "q", ConsumerGroup: "g", Batch: 5, Partitions: 2}, 1<<20)
	if status != jsonapi.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	a := decode[popAnswer](t, body)
	claim := r.store.popCalls()[0]
	lease := uuid.UUID(claim.Lease).String()
	if a.Queue != "q" || a.Partition != "a" || a.PartitionID != "1" || a.LeaseID != lease || a.ConsumerGroup != "g" || a.PartitionsClaimed != 2 {
		t.Errorf("head %+v; lease %s", a, lease)
	}
	if claim.MaxBytes != 1<<20 {
		t.Errorf("answer bound %d not passed to the claim", claim.MaxBytes)
	}
	want := []string{"a-1/a", "a-2/a", "b-1/b"}
	if len(a.Messages) != len(want) {
		t.Fatalf("messages %+v", a.Messages)
	}
	for i, m := range a.Messages {
		if m.TransactionID+"/"+m.Partition != want[i] || m.LeaseID != lease || m.ConsumerGroup != "g" ||
			!strings.HasPrefix(string(m.Data), `{"plain":"`) {
			t.Errorf("message %d: %+v %s", i, m, m.Data)
		}
	}
}

func TestServePopWithAutoAckHasNoLease(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.store.popByKey["p"] = delivers(1, "p", 1, 10)
	status, body := r.c.ServePop(context.Background(), tenant, jsonapi.PopRequest{Queue: "q", Partition: "p", AutoAck: true}, 0)
	if status != jsonapi.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	if a := decode[popAnswer](t, body); a.LeaseID != "" || len(a.Messages) != 1 || a.Messages[0].LeaseID != "" {
		t.Errorf("%s", body)
	}
}

func TestServePopFailures(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection refused")
	for _, c := range []struct {
		name   string
		req    jsonapi.PopRequest
		claim  func(pgwire.PopRequest) (pgwire.PopResult, error)
		status int
		says   string
	}{
		{"no queue", jsonapi.PopRequest{}, delivers(1, "p", 1, 10), jsonapi.StatusBadRequest, "queue"},
		{"bad batch", jsonapi.PopRequest{Queue: "q", Batch: -1}, delivers(1, "p", 1, 10), jsonapi.StatusBadRequest, "batch"},
		{"database", jsonapi.PopRequest{Queue: "q", Partition: "p"}, fails(boom), jsonapi.StatusServiceUnavailable, boom.Error()},
		{"undecryptable", jsonapi.PopRequest{Queue: "q", Partition: "p"}, func(req pgwire.PopRequest) (pgwire.PopResult, error) {
			res, err := delivers(1, "p", 1, 10)(req)
			res.Messages[0].Frame.Payload = []byte(`"secret"`)
			return res, err
		}, jsonapi.StatusInternalServerError, errNoKey.Error()},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			r.store.popByKey["p"] = c.claim
			status, body := r.c.ServePop(context.Background(), tenant, c.req, 0)
			if status != c.status || !strings.Contains(decode[struct{ Error string }](t, body).Error, c.says) {
				t.Errorf("%d %s; want %d saying %q", status, body, c.status, c.says)
			}
		})
	}
}

// What a pop delivered before a claim failed goes out: its lease holds
// those partitions, and the consumer must see it to acknowledge them.
func TestServePopAnswersWhatWasDeliveredBeforeAFailure(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.marks.cands = []cursors.Candidate{{ID: 1, Name: "a"}, {ID: 2, Name: "b"}}
	r.store.popByID[1] = delivers(1, "a", 2, 10)
	r.store.popByID[2] = fails(errors.New("timeout"))
	status, body := r.c.ServePop(context.Background(), tenant, jsonapi.PopRequest{Queue: "q", Batch: 5, Partitions: 2}, 0)
	if status != jsonapi.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	if a := decode[popAnswer](t, body); len(a.Messages) != 2 || a.PartitionsClaimed != 1 {
		t.Errorf("%s", body)
	}
}

func TestServeAckAnswersInRequestOrder(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.store.ack = func(pid int64, items []pgwire.AckItem) (pgwire.AckResult, error) {
		res := pgwire.AckResult{Errs: make([]string, len(items)), DLQ: make([]bool, len(items)), Released: pid == 1, Queue: "q", Partition: "p"}
		for i, it := range items {
			res.DLQ[i] = it.Status == "dlq"
		}
		return res, nil
	}
	wire := []jsonapi.Ack{
		{TransactionID: "x", PartitionID: 2, Status: "completed", ConsumerGroup: "g"},
		{TransactionID: "y", PartitionID: 1, Status: "dlq", ConsumerGroup: "g"},
	}
	status, body := r.c.ServeAck(context.Background(), tenant, wire)
	if status != jsonapi.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	got := decode[[]struct {
		Index                    int
		TransactionID            string
		Success                  bool
		LeaseReleased, DLQ       bool
		QueueName, PartitionName string
	}](t, body)
	if len(got) != 2 || got[0].TransactionID != "x" || got[0].DLQ || got[0].LeaseReleased ||
		got[1].TransactionID != "y" || !got[1].DLQ || !got[1].LeaseReleased || got[1].Index != 1 || !got[0].Success || got[0].QueueName != "q" {
		t.Errorf("%s", body)
	}
	if calls := r.store.ackCalls(); len(calls) != 2 || calls[0].pid != 1 {
		t.Errorf("calls %+v", calls)
	}
}

func TestServeExtend(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	lease := uuid.New()
	r.store.extend = func(l [16]byte, seconds int) (time.Time, bool, error) {
		if l != lease || seconds != 90 {
			t.Errorf("extended %x by %d", l, seconds)
		}
		return at, true, nil
	}
	status, body := r.c.ServeExtend(context.Background(), tenant, jsonapi.LeaseRequest{LeaseID: lease.String(), Lease: lease, Seconds: 90})
	if status != jsonapi.StatusOK || !strings.Contains(string(body), `"expiresAt":"2030-01-01T00:00:00Z"`) {
		t.Errorf("%d %s", status, body)
	}
	r.store.extend = func([16]byte, int) (time.Time, bool, error) { return time.Time{}, false, errors.New("pool closed") }
	if status, _ := r.c.ServeExtend(context.Background(), tenant, jsonapi.LeaseRequest{Lease: lease, Seconds: 1}); status != jsonapi.StatusServiceUnavailable {
		t.Errorf("database failure: %d", status)
	}
}

func deadLetter(txid string, found bool, payload string) pgwire.DeadLetter {
	d := pgwire.DeadLetter{ID: 1, TransactionID: txid, PartitionID: 3, Queue: "q", Partition: "p", Group: "g", Error: "boom",
		RetryCount: 2, Offset: 7, FailedAt: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), Found: found}
	if found {
		d.Message = pgwire.Message{Offset: 7, Frame: segment.Frame{ID: uuid.New(), TransactionID: txid, Payload: []byte(payload)}}
	}
	return d
}

func TestServeDeadLetters(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.store.dead = func() ([]pgwire.DeadLetter, int64, error) {
		return []pgwire.DeadLetter{deadLetter("a", true, `{"n":1}`), deadLetter("b", false, "")}, 12, nil
	}
	status, body := r.c.ServeDeadLetters(context.Background(), tenant, jsonapi.DeadLettersRequest{Queue: "q"})
	if status != jsonapi.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	got := decode[struct {
		Messages []struct {
			TransactionID string
			Data          json.RawMessage
		}
		Pagination struct{ Limit, Offset, Total int }
	}](t, body)
	if len(got.Messages) != 2 || string(got.Messages[0].Data) != `{"plain":{"n":1}}` || string(got.Messages[1].Data) != "null" ||
		got.Pagination.Limit != 100 || got.Pagination.Total != 12 {
		t.Errorf("%s", body)
	}
}

func TestServeDeadLettersFailures(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		req    jsonapi.DeadLettersRequest
		dead   func() ([]pgwire.DeadLetter, int64, error)
		status int
		says   string
	}{
		{"no queue", jsonapi.DeadLettersRequest{}, nil, jsonapi.StatusBadRequest, "queue"},
		{"bad limit", jsonapi.DeadLettersRequest{Queue: "q", Limit: 5000}, nil, jsonapi.StatusBadRequest, "limit"},
		{"database", jsonapi.DeadLettersRequest{Queue: "q"}, func() ([]pgwire.DeadLetter, int64, error) {
			return nil, 0, errors.New("too many connections")
		}, jsonapi.StatusServiceUnavailable, "too many connections"},
		{"undecryptable", jsonapi.DeadLettersRequest{Queue: "q"}, func() ([]pgwire.DeadLetter, int64, error) {
			return []pgwire.DeadLetter{deadLetter("a", true, `{}`), deadLetter("b", true, `"secret"`)}, 2, nil
		}, jsonapi.StatusInternalServerError, errNoKey.Error()},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			asked := false
			r.store.dead = func() ([]pgwire.DeadLetter, int64, error) {
				asked = true
				if c.dead == nil {
					return nil, 0, nil
				}
				return c.dead()
			}
			status, body := r.c.ServeDeadLetters(context.Background(), tenant, c.req)
			if status != c.status || !strings.Contains(decode[struct{ Error string }](t, body).Error, c.says) {
				t.Errorf("%d %s; want %d saying %q", status, body, c.status, c.says)
			}
			if asked != (c.dead != nil) {
				t.Errorf("database asked: %v", asked)
			}
		})
	}
}
