package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/internal/buckets"
)

// owners is -aware's copy of the bridges' owners' table (docs/ownership.md):
// read once from <prefix>.v1.owners, replaced by every announcement on
// <prefix>.v1.owners.changed. It sends what the Go client's PartitionAware
// sends, without the client's JSON of results, so that the load generator's
// own cost stays as small as the plain target's.
type owners struct {
	tab       atomic.Pointer[ownersTable]
	sub       *nats.Subscription
	fallbacks atomic.Int64 // items sent to the shared subject: no responder on the owner's
}

type ownersTable struct {
	Buckets int `json:"buckets"`
	Bridges []struct {
		Subject string `json:"subject"`
	} `json:"bridges"`
	Owners []int32 `json:"owners"`
}

func parseOwners(data []byte) (*ownersTable, error) {
	var t ownersTable
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, err
	}
	if t.Buckets < 1 || len(t.Owners) != t.Buckets || len(t.Bridges) == 0 {
		return nil, errors.New("an owners' table without buckets or bridges")
	}
	for _, ix := range t.Owners {
		if ix < 0 || int(ix) >= len(t.Bridges) {
			return nil, errors.New("an owners' table naming a bridge it does not list")
		}
	}
	return &t, nil
}

func newOwners(nc *nats.Conn, prefix string) (*owners, error) {
	o := &owners{}
	sub, err := nc.Subscribe(prefix+".v1.owners.changed", func(m *nats.Msg) {
		if t, err := parseOwners(m.Data); err == nil {
			o.tab.Store(t)
		}
	})
	if err != nil {
		return nil, err
	}
	o.sub = sub
	m, err := nc.Request(prefix+".v1.owners", nil, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("-aware: the owners' table: %w", err)
	}
	t, err := parseOwners(m.Data)
	if err != nil {
		return nil, fmt.Errorf("-aware: %w", err)
	}
	o.tab.CompareAndSwap(nil, t) // an announcement heard meanwhile is newer
	return o, nil
}

// split groups items by their owner's subject (the default tenant's).
func (o *owners) split(items []item) map[string][]item {
	t := o.tab.Load()
	parts := make(map[string][]item, 1)
	for _, it := range items {
		s := t.Bridges[t.Owners[buckets.Of([16]byte{}, it.queue, it.partition, t.Buckets)]].Subject
		parts[s] = append(parts[s], it)
	}
	return parts
}
