package pgwire

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/storage"
)

// QueueDeleted is what a queue delete removed.
type QueueDeleted struct {
	Existed    bool
	QueueID    int64
	Partitions []int64 // the deleted partitions' ids, ascending
}

// DeleteQueue deletes a tenant's queue and everything under it
// (queue_delete_v1): from its return on no reader or writer reaches it.
// Its segments and hash blobs are removed afterwards by PurgeStep.
func (db *DB) DeleteQueue(ctx context.Context, tenant tenancy.TenantID, queue string) (QueueDeleted, error) {
	var d QueueDeleted
	var qid *int64
	err := db.queryRow(ctx, func(r pgx.Row) error { return r.Scan(&d.Existed, &qid, &d.Partitions) },
		`SELECT o_existed, o_queue_id, o_pids FROM queen.queue_delete_v1($1, $2)`, tenantArg(tenant), queue)
	if err != nil {
		return d, fmt.Errorf("pgwire: delete queue %q: %w", queue, err)
	}
	if qid != nil {
		d.QueueID = *qid
	}
	return d, nil
}

// PurgeStep removes, in one bounded step, what deleted queues left
// (log_purge_step_v1): at most batch segments and batch hash blobs of each
// of at most maxPartitions deleted partitions.
func (db *DB) PurgeStep(ctx context.Context, maxPartitions, batch int) (storage.PurgeResult, error) {
	var r storage.PurgeResult
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		return conn.QueryRow(ctx, `SELECT o_partitions, o_rows, o_done FROM queen.log_purge_step_v1($1, $2)`, maxPartitions, batch).
			Scan(&r.Partitions, &r.Rows, &r.Done)
	})
	if err != nil {
		return r, fmt.Errorf("pgwire: purge step: %w", err)
	}
	return r, nil
}
