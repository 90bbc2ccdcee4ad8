package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// ownerEngine records what reached the owner; mu guards calls.
type ownerEngine struct {
	mu    sync.Mutex
	calls []string
	moved bool // ownership moved on: forwards are refused
}

func (o *ownerEngine) record(s string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.moved {
		return errors.New("not the owner")
	}
	o.calls = append(o.calls, s)
	return nil
}

func (o *ownerEngine) PullForwarded(tenant tenancy.TenantID, stream, name string, req PullRequest, inbox string) error {
	return o.record(fmt.Sprintf("next %s %s/%s %+v %s", uuid.UUID(tenant), stream, name, req, inbox))
}

func (o *ownerEngine) AckForwarded(tenant tenancy.TenantID, ack AckRef, kind AckKind, delay time.Duration, reason, reply string) error {
	return o.record(fmt.Sprintf("ack %s %+v %s %s %q %s", uuid.UUID(tenant), ack, kind, delay, reason, reply))
}

func (o *ownerEngine) ConsumerChanged(_ context.Context, tenant tenancy.TenantID, stream, name string) error {
	return o.record(fmt.Sprintf("changed %s %s/%s", uuid.UUID(tenant), stream, name))
}

func (o *ownerEngine) seen() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.calls...)
}

func startForwards(t *testing.T, id string, eng ForwardEngine) *Forwards {
	t.Helper()
	nc, err := nats.Connect(testenv.NATSURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	f, err := NewForwards(ForwardConfig{NATS: nc, Prefix: "fwtest-" + uuid.NewString()[:8], ID: id, Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	return testkit.Started(t, f, nil)
}

// A pull, an ack and a changed definition forwarded by one bridge reach
// the owner's engine as they were, tenant included.
func TestForwardsReachTheOwner(t *testing.T) {
	owner := &ownerEngine{}
	b := startForwards(t, "b2", owner)
	a, err := NewForwards(ForwardConfig{NATS: b.cfg.NATS, Prefix: b.cfg.Prefix, ID: "b1", Engine: &ownerEngine{}})
	if err != nil {
		t.Fatal(err)
	}
	tenant := tenancy.TenantID(uuid.MustParse("0b7e4f4e-51d3-4c5e-9d0c-0a1b2c3d4e5f"))
	req := PullRequest{Batch: 5, MaxBytes: 100, Expires: time.Second, NoWait: true, Heartbeat: 500 * time.Millisecond}
	ref := AckRef{PartitionID: 7, Stream: "ORDERS", Consumer: "C", Delivered: 2, Offset: 42, ConsumerSeq: 9, Timestamp: 1, Pending: 3, Epoch: 4}
	if err := a.ForwardPull("b2", tenant, "ORDERS", "C", req, "_INBOX.x"); err != nil {
		t.Fatal(err)
	}
	if err := a.ForwardAck("b2", tenant, ref, AckNak, time.Second, "later", "_INBOX.r"); err != nil {
		t.Fatal(err)
	}
	if err := a.ForwardChanged("b2", tenant, "ORDERS", "C"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "three forwards taken", 10*time.Second, func() bool { return b.Stats().Taken == 3 })
	want := []string{
		fmt.Sprintf("next %s ORDERS/C %+v _INBOX.x", uuid.UUID(tenant), req),
		fmt.Sprintf("ack %s %+v -NAK 1s %q _INBOX.r", uuid.UUID(tenant), ref, "later"),
		fmt.Sprintf("changed %s ORDERS/C", uuid.UUID(tenant)),
	}
	got := owner.seen()
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("the owner took\n%q\nwant\n%q", got, want)
	}
	if a.Stats().Sent != 3 {
		t.Fatalf("sent %d", a.Stats().Sent)
	}

	// A forward the owner's engine refuses (ownership moved on) is counted.
	owner.mu.Lock()
	owner.moved = true
	owner.mu.Unlock()
	// A changed definition waits for the owner: its refusal comes back.
	if err := a.ForwardChanged("b2", tenant, "ORDERS", "C"); err == nil || !strings.Contains(err.Error(), "not the owner") {
		t.Fatalf("a changed definition the owner refused: %v", err)
	}
	testkit.WaitFor(t, "the refusal counted", 10*time.Second, func() bool { return b.Stats().Refused == 1 })
}
