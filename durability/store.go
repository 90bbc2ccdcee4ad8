package durability

import (
	"context"

	"github.com/queenbridge/queenbridge/storage"
)

// Store is the storage calls durability makes: the health probe, the
// maintenance switches, and the steps of retention and of the purge of
// deleted queues. *pgwire.DB satisfies it; unit tests hand in a fake, so
// the switches, the health answer and the retention loop are tested
// without PostgreSQL.
type Store interface {
	Ping(ctx context.Context) error
	SetMaintenance(ctx context.Context, on bool) error
	SetPopMaintenance(ctx context.Context, on bool) error
	ReadSwitches(ctx context.Context) (storage.Switches, error)
	RetentionStep(ctx context.Context, maxPartitions, batch int) (storage.RetentionResult, error)
	PurgeStep(ctx context.Context, maxPartitions, batch int) (storage.PurgeResult, error)
}
