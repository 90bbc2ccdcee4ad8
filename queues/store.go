package queues

import (
	"context"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/storage"
)

// Store is the storage calls queue settings make: a look-up, a configure,
// and recording the key id a queue's payloads are sealed under.
// *pgwire.DB satisfies it; unit tests hand in a fake, so the cache and the
// sealing rules are tested without PostgreSQL.
type Store interface {
	LookupQueue(ctx context.Context, tenant tenancy.TenantID, name string) (storage.Queue, error)
	ConfigureQueue(ctx context.Context, tenant tenancy.TenantID, name string, upd storage.QueueUpdate) (storage.Queue, error)
	RecordKeyID(ctx context.Context, tenant tenancy.TenantID, name string, id uint8) (q storage.Queue, found bool, err error)
}
