package admin

import (
	"context"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/storage"
)

// Store is the storage calls the admin routes make: the counts of queues,
// partitions, groups and a queue's streaming queries, and the few writes
// only these routes make (a queue's delete, a subscription's start).
// *pgwire.DB satisfies it; unit tests hand in a fake, so what the routes
// make of the rows is tested without PostgreSQL.
type Store interface {
	QueueStats(ctx context.Context, tenant tenancy.TenantID, f pgwire.QueueFilter) ([]pgwire.QueueStat, error)
	PartitionStats(ctx context.Context, tenant tenancy.TenantID, queue string) (q pgwire.QueueInfo, parts []pgwire.PartitionStat, found bool, err error)
	TenantLag(ctx context.Context, tenant tenancy.TenantID) (pgwire.Lag, error)
	TopDeadLetterErrors(ctx context.Context, tenant tenancy.TenantID, f pgwire.QueueFilter, limit int) ([]pgwire.DeadLetterError, error)
	DeleteQueue(ctx context.Context, tenant tenancy.TenantID, queue string) (pgwire.QueueDeleted, error)
	QueueConsumers(ctx context.Context, tenant tenancy.TenantID, queue string) (parts []pgwire.ConsumerPartition, cursors []pgwire.ConsumerCursor, found bool, err error)
	StreamQueriesOf(ctx context.Context, tenant tenancy.TenantID, queue string) ([]pgwire.StreamQueryStats, error)
	GroupCursors(ctx context.Context, tenant tenancy.TenantID, group string) ([]pgwire.GroupCursor, error)
	SetSubscriptionStart(ctx context.Context, tenant tenancy.TenantID, group string, at time.Time) (int64, error)
	// Stats is the pool's counters (the status answer counts statement
	// timeouts as database errors).
	Stats() storage.Stats
}
