package cursors

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// Consumers idle in the Store that no bridge serves (their bridge stopped
// before their threshold passed) are taken by their owner's sweep and
// deleted once their threshold passes there. A durable consumer with no
// threshold, and one another bridge owns, are left alone.
func TestSweepDeletesIdleConsumersNoBridgeServes(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Owner = func(_ tenancy.TenantID, _, key string) (bool, string) { return key != "$js.theirs", "b2" }
	})
	for _, conf := range []ConsumerConfig{
		{Name: "eph", InactiveThreshold: 5 * time.Second},
		{Name: "theirs"},
		{Durable: "dur"},
		{Durable: "durt", InactiveThreshold: 10 * time.Second},
	} {
		c := StoredConsumer{Tenant: tenant, Queue: "ORDERS", Name: conf.ConsumerName(), Durable: conf.Durable != "",
			Config: encodeConfig(conf), Start: ConsumerStart{Policy: storePolicies[DeliverAll]}}
		if _, err := h.store.PutConsumer(context.Background(), c, "create"); err != nil {
			t.Fatal(err)
		}
	}
	n, err := h.e.sweepIdle()
	if err != nil || n != 2 {
		t.Fatalf("sweep took %d consumers (%v), want eph and durt", n, err)
	}
	h.settle("eph")
	h.settle("durt")
	left := func() []string {
		cs, _ := h.store.ListConsumers(context.Background(), tenant, "ORDERS")
		var names []string
		for _, c := range cs {
			names = append(names, c.Name)
		}
		sort.Strings(names)
		return names
	}
	h.clock.Advance(5 * time.Second)
	testkit.WaitFor(t, "eph deleted", 10*time.Second, func() bool {
		_, err := h.store.GetConsumer(context.Background(), tenant, "ORDERS", "eph")
		return errors.Is(err, ErrConsumerMissing)
	})
	if got := left(); len(got) != 3 || got[0] != "dur" || got[1] != "durt" || got[2] != "theirs" {
		t.Fatalf("after 5 s: %v, want [dur durt theirs]", got)
	}
	h.clock.Advance(5 * time.Second)
	testkit.WaitFor(t, "durt deleted", 10*time.Second, func() bool {
		_, err := h.store.GetConsumer(context.Background(), tenant, "ORDERS", "durt")
		return errors.Is(err, ErrConsumerMissing)
	})
	if got := left(); len(got) != 2 || got[0] != "dur" || got[1] != "theirs" {
		t.Fatalf("after 10 s: %v, want [dur theirs]", got)
	}
}

// The key the Store looks for is the one the engine's encoding writes.
func TestThresholdKeyIsTheEncodedOne(t *testing.T) {
	b := encodeConfig(ConsumerConfig{Durable: "d", InactiveThreshold: 3 * time.Second})
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m[thresholdKey] != float64(3*time.Second) {
		t.Fatalf("%s in %s: %v", thresholdKey, b, m[thresholdKey])
	}
}
