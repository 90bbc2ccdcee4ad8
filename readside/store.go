package readside

import (
	"context"

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
