package readside

import (
	"encoding/json"
	"strconv"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/internal/peers"
	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// A tombstone reaches what every bridge holds of the message in memory:
// the bridge that served the delete tells its own Tombstones, then its
// peers on <prefix>.v1.message.deleted, and each peer's read side tells its
// Tombstones (Config.Tombstones). Like MESSAGE_AVAILABLE it is a hint: a
// peer that misses it (disconnected at that moment) may deliver a copy it
// held from memory once; every read of PostgreSQL skips the message.

// deletedMsg is one tombstone on <prefix>.v1.message.deleted.
type deletedMsg struct {
	Tenant        string `json:"tenant"`
	PartitionID   string `json:"partitionId"`
	TransactionID string `json:"transactionId"`
}

// tellDeleted tells this bridge's Tombstones and its peers that a
// tombstone deleted txid in partition pid.
func (s *Messages) tellDeleted(tenant tenancy.TenantID, pid int64, txid string) {
	if s.cfg.Tombstones != nil {
		s.cfg.Tombstones.Deleted(tenant, pid, txid)
	}
	if !s.cfg.Peers.Enabled() {
		return
	}
	data, _ := json.Marshal(deletedMsg{Tenant: uuid.UUID(tenant).String(), PartitionID: strconv.FormatInt(pid, 10), TransactionID: txid})
	// A hint: a publish that fails leaves peers as a lost one would.
	_ = s.cfg.Peers.Publish(peers.MessageDeleted, data)
}

// onDeleted tells Tombstones of a peer's tombstone (this bridge's own are
// dropped by the subscription).
func (r *Reads) onDeleted(m *nats.Msg) {
	var msg deletedMsg
	if json.Unmarshal(m.Data, &msg) != nil {
		return
	}
	tenant, err := tenancy.Parse(msg.Tenant)
	if err != nil {
		return
	}
	pid, err := strconv.ParseInt(msg.PartitionID, 10, 64)
	if err != nil || msg.TransactionID == "" {
		return
	}
	r.peerTombstones.Add(1)
	r.cfg.Tombstones.Deleted(tenant, pid, msg.TransactionID)
}
