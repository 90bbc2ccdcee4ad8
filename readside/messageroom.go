package readside

import (
	"errors"

	"github.com/queenbridge/queenbridge/internal/peers"
	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// MessagesConfig is what Queen's message routes read.
type MessagesConfig struct {
	// DB runs every read and the tombstone (*pgwire.DB). Required.
	DB MessageStore
	// Payloads decrypts payloads (*queues.Settings). Required.
	Payloads Payloads
	// Tombstones, when set, hears each tombstone that deleted something,
	// after it committed (cursors.JSEngine: what this bridge holds of the
	// message in memory goes).
	Tombstones Tombstones
	// Peers hears the same, on <prefix>.v1.message.deleted, for their
	// Config.Tombstones (tombstones.go); no NATS: none.
	Peers peers.Link
}

// Tombstones hears Queen's message deletes that deleted something.
type Tombstones interface {
	Deleted(tenant tenancy.TenantID, partitionID int64, transactionID string)
}

// Messages serves Queen's message routes (docs/admin-messages.md): the
// list form of GET /api/v1/messages, a message's detail and its
// tombstone. It holds no state of its own and runs no goroutine.
type Messages struct {
	cfg MessagesConfig
}

// NewMessages checks cfg.
func NewMessages(cfg MessagesConfig) (*Messages, error) {
	if cfg.DB == nil || cfg.Payloads == nil {
		return nil, errors.New("readside: MessagesConfig needs DB and Payloads")
	}
	return &Messages{cfg: cfg}, nil
}
