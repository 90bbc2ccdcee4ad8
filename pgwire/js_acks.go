package pgwire

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5/pgxpool"
)

// JSAckUpdate is the acknowledgement state of a JetStream consumer on one
// partition, to be stored.
type JSAckUpdate struct {
	ConsumerID  int64
	PartitionID int64
	// Floor: every offset up to it is acknowledged.
	Floor int64
	// Acked are offsets acknowledged above Floor (any order; those at or
	// below it are dropped).
	Acked []int64
	// Deliveries counts the deliveries of offsets delivered and not yet
	// acknowledged (counts >= 1; offsets at or below Floor are dropped).
	Deliveries map[int64]int
	// Delivered is the highest offset handed out (0: unchanged); every
	// offset above Floor up to it not in Acked was delivered and not yet
	// acknowledged, once unless Deliveries counts more. The stored mark
	// only rises (cursor row's delivered_to).
	Delivered int64
	// Dead are messages to write to the queue's dead letters, as the
	// consumer's group: max_deliver reached, or terminated (+TERM) with
	// a reason.
	Dead []JSDeadLetter
}

// JSDeadLetter is a message a JetStream consumer gave up on.
type JSDeadLetter struct {
	Offset        int64
	TransactionID string // the message's (segment.Frame.TransactionID)
	Error         string // why ("" for none): the +TERM reason, or max_deliver
	// Deliveries is how often it was delivered; the dead letter's
	// retry_count is the deliveries after the first.
	Deliveries int
}

// commitAcksSQL stores the acknowledgement state of many (consumer,
// partition) pairs and writes their dead letters, in one statement and one
// commit. The state is joined with what is stored
// (consumer_acks_merge_v1): the floor never moves back, acknowledged
// offsets and delivery counts only grow, so an update from a bridge that no
// longer serves the consumer (older than what the current one stored)
// undoes nothing, and an update may carry only what changed. The usual
// update holds all that is stored already (the same bridge's state, grown:
// its floor at least the stored one, and every stored acknowledged offset
// or counted delivery at or below its floor or among its own); it is
// taken as it is, by a test of a few operators, and only the rest go
// through the merge function (evaluated per column then: rare, and a
// row-valued subquery per row would cost the usual update too).
// The delivered mark (delivered_to) only rises. A missing
// cursor row is made, its start_offset where the subscription starts it
// (consumer_seed_v1, which may walk a partition's segments back to the
// subscription's time: asked only where the row is missing, since the
// insert's values are computed for a row that exists too).
//
// Locks, in the one order: the consumers' definitions (FOR KEY SHARE, in
// ascending id), so that a consumer deleted meanwhile (DeleteConsumer,
// queue_delete_v1: both lock the definition before the cursor rows) gets
// no cursor row again; then the cursor rows in ascending (partition,
// group): the insert takes its input in that order and locks each
// conflicting row as it comes. Partition rows are read, not locked. Pairs
// whose consumer is gone, or whose partition is not of the consumer's
// queue, write nothing.
//
// Parameters: per pair, parallel arrays of consumer id, partition id,
// floor, and the first index (0-based) and count of its acknowledged
// offsets in $8 and of its delivery counts in $9/$10; then the dead
// letters, parallel arrays of pair ordinal, offset, transactionId, error,
// retry count.
var commitAcksSQL = statement("js_commit_acks")

// CommitAcks stores the acknowledgement state of many (consumer,
// partition) pairs and writes their dead letters, in one statement and one
// commit (commitAcksSQL says how the state is joined with what is stored,
// and the lock order). Two updates of one pair in ups are joined into one
// first. Bad input is refused before anything is written.
func (db *DB) CommitAcks(ctx context.Context, ups []JSAckUpdate) error {
	if len(ups) == 0 {
		return nil
	}
	ups, err := joinAckUpdates(ups)
	if err != nil {
		return err
	}
	args := commitAcksArgs(ups)
	err = db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		_, err := conn.Exec(ctx, commitAcksSQL, args...)
		return err
	})
	if err != nil {
		return fmt.Errorf("pgwire: commit the acknowledgements of %d consumer partitions: %w", len(ups), err)
	}
	return nil
}

// joinAckUpdates checks ups and joins the updates of one (consumer,
// partition) into one, as the statement joins an update with what is
// stored: the greater floor, the union of acknowledged offsets and dead
// letters, the greater count of each offset.
func joinAckUpdates(ups []JSAckUpdate) ([]JSAckUpdate, error) {
	type key struct{ c, p int64 }
	at := make(map[key]int, len(ups))
	out := make([]JSAckUpdate, 0, len(ups))
	for i, u := range ups {
		if err := u.validate(); err != nil {
			return nil, fmt.Errorf("pgwire: acknowledgement update %d: %w", i, err)
		}
		k := key{u.ConsumerID, u.PartitionID}
		j, ok := at[k]
		if !ok {
			at[k] = len(out)
			out = append(out, u)
			continue
		}
		o := &out[j]
		o.Floor = max(o.Floor, u.Floor)
		o.Delivered = max(o.Delivered, u.Delivered)
		o.Acked = append(slices.Clone(o.Acked), u.Acked...)
		o.Dead = append(slices.Clone(o.Dead), u.Dead...)
		d := make(map[int64]int, len(o.Deliveries)+len(u.Deliveries))
		for _, m := range []map[int64]int{o.Deliveries, u.Deliveries} {
			for off, n := range m {
				d[off] = max(d[off], n)
			}
		}
		o.Deliveries = d
	}
	return out, nil
}

// validate refuses an update that could not be what a consumer stores.
func (u *JSAckUpdate) validate() error {
	if u.ConsumerID <= 0 || u.PartitionID <= 0 || u.Floor < 0 || u.Delivered < 0 {
		return fmt.Errorf("consumer id %d, partition id %d, floor %d, delivered %d: the ids must be positive, the floor and delivered mark not negative",
			u.ConsumerID, u.PartitionID, u.Floor, u.Delivered)
	}
	for _, o := range u.Acked {
		if o <= 0 {
			return fmt.Errorf("consumer %d, partition %d: acknowledged offset %d is not positive", u.ConsumerID, u.PartitionID, o)
		}
	}
	for o, n := range u.Deliveries {
		if o <= 0 || n < 1 {
			return fmt.Errorf("consumer %d, partition %d: %d deliveries of offset %d: the offset must be positive and the count at least 1",
				u.ConsumerID, u.PartitionID, n, o)
		}
	}
	for _, d := range u.Dead {
		if d.Offset <= 0 || d.Deliveries < 1 {
			return fmt.Errorf("consumer %d, partition %d: dead letter at offset %d after %d deliveries: the offset must be positive and the deliveries at least 1",
				u.ConsumerID, u.PartitionID, d.Offset, d.Deliveries)
		}
	}
	return nil
}

// commitAcksArgs are commitAcksSQL's arguments for ups: the sets flat,
// each pair's above its floor, ascending and distinct.
func commitAcksArgs(ups []JSAckUpdate) []any {
	n := len(ups)
	cids, pids, floors, delivered := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	af, an, df, dn := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	var acked, doffs []int64
	var dcounts []int32
	var drow, dretries []int32
	var doff []int64
	var dtx, derr []string
	for i, u := range ups {
		cids[i], pids[i], floors[i], delivered[i] = u.ConsumerID, u.PartitionID, u.Floor, max(u.Delivered, u.Floor)
		af[i] = int32(len(acked))
		for _, o := range u.Acked {
			if o > u.Floor {
				acked = append(acked, o)
			}
		}
		slices.Sort(acked[af[i]:])
		acked = append(acked[:af[i]], slices.Compact(acked[af[i]:])...)
		an[i] = int32(len(acked)) - af[i]
		df[i] = int32(len(doffs))
		for o := range u.Deliveries {
			if o > u.Floor {
				doffs = append(doffs, o)
			}
		}
		slices.Sort(doffs[df[i]:])
		for _, o := range doffs[df[i]:] {
			dcounts = append(dcounts, int32(u.Deliveries[o]))
		}
		dn[i] = int32(len(doffs)) - df[i]
		for _, d := range u.Dead {
			drow, doff, dtx, derr, dretries = append(drow, int32(i+1)), append(doff, d.Offset), append(dtx, d.TransactionID),
				append(derr, d.Error), append(dretries, int32(d.Deliveries-1))
		}
	}
	return []any{cids, pids, floors, af, an, df, dn, acked, doffs, dcounts, drow, doff, dtx, derr, dretries, delivered}
}
