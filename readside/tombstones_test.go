package readside

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/internal/peers"
	"github.com/queenbridge/queenbridge/internal/route"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/jsonapi"
)

// A tombstone served on one bridge reaches the Tombstones of its peers'
// read sides (what they hold of the message in memory goes), and its own
// once, from the route; one that deleted nothing is told to no one.
func TestMessageDeleteTellsPeers(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	nc, err := nats.Connect(testenv.NATSURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	prefix := "ts" + uuid.NewString()[:8]
	link := func(origin string) peers.Link { return peers.Link{NATS: nc, Prefix: prefix, Origin: origin} }
	hereTold, aTold, bTold := &toldDeletes{}, &toldDeletes{}, &toldDeletes{}
	a := startReads(t, Config{DB: db, Peers: link("a"), Tombstones: aTold})
	b := startReads(t, Config{DB: db, Peers: link("b"), Tombstones: bTold})
	m, err := NewMessages(MessagesConfig{DB: &deleteFake{}, Payloads: plainPayloads{}, Tombstones: hereTold, Peers: link("a")})
	if err != nil {
		t.Fatal(err)
	}
	tenant := tenancy.TenantID{0x7e, 3}
	for _, txid := range []string{"t2", "t1"} { // t2 deletes nothing
		path := map[string]string{"partitionId": "7", "transactionId": txid}
		if status, body := m.serveDeleteMessage(context.Background(), tenant, route.Request{Path: func(n string) string { return path[n] }}); status != jsonapi.StatusOK {
			t.Fatalf("delete %s: %d %s", txid, status, body)
		}
	}
	testkit.WaitFor(t, "b to hear the tombstone", time.Minute, func() bool { return b.Stats().PeerTombstones == 1 })
	// b's own tombstone follows a's on the one connection: once b's is
	// told to a, a's own has passed a's subscription, which must have
	// dropped it.
	mb, err := NewMessages(MessagesConfig{DB: &deleteFake{}, Payloads: plainPayloads{}, Peers: link("b")})
	if err != nil {
		t.Fatal(err)
	}
	path := map[string]string{"partitionId": "8", "transactionId": "t1"}
	mb.serveDeleteMessage(context.Background(), tenant, route.Request{Path: func(n string) string { return path[n] }})
	testkit.WaitFor(t, "a to hear b's tombstone", time.Minute, func() bool { return a.Stats().PeerTombstones == 1 })
	for _, c := range []struct {
		name string
		told *toldDeletes
		want string
	}{{"the serving bridge", hereTold, "[7/t1]"}, {"a's read side", aTold, "[8/t1]"}, {"b's read side", bTold, "[7/t1]"}} {
		c.told.mu.Lock()
		got, tenants := fmt.Sprint(c.told.told), c.told.tenants
		c.told.mu.Unlock()
		if got != c.want || len(tenants) != 1 || tenants[0] != tenant {
			t.Errorf("%s was told %s of tenants %v, want %s of %v", c.name, got, tenants, c.want, tenant)
		}
	}
}
