package readside

import (
	"context"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/storage"
)

// Store is the one storage call the read side makes: a read of stored
// messages after an offset. *pgwire.DB satisfies it; unit tests hand in a
// fake, so the fetch rules (validation, parking, the answer) are tested
// without PostgreSQL.
type Store interface {
	ReadMessages(ctx context.Context, tenant tenancy.TenantID, queue, partition string, from int64, limit int, maxBytes int64) ([]storage.Message, error)
}

// MessageStore is the storage calls of Queen's message routes: the
// partitions a list walks with their groups' cursor rows, the pages of
// the list, a message by its transactionId, and its tombstone.
// *pgwire.DB satisfies it.
type MessageStore interface {
	MessagePartitions(ctx context.Context, tenant tenancy.TenantID, f storage.MessageFilter) ([]storage.MessagePartition, error)
	NewestMessages(ctx context.Context, ranges []storage.OffsetRange, from, to time.Time, need int64) ([]storage.ListedMessage, error)
	NewestDeadLettered(ctx context.Context, pids []int64, from, to time.Time, need int64) ([]storage.ListedMessage, error)
	FindMessage(ctx context.Context, tenant tenancy.TenantID, pid int64, txid string) (out storage.FoundMessage, found bool, err error)
	DeleteMessage(ctx context.Context, tenant tenancy.TenantID, pid int64, txid string) (deleted bool, err error)
}
