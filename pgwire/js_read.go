package pgwire

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/segment"
)

// JSPartition is a partition of a JetStream consumer's queue, with the
// consumer's acknowledgement state on it.
type JSPartition struct {
	ID   int64
	Name string
	// Last is the partition's last offset (0: none written); First the
	// first offset retention left (Last + 1 when none is left).
	Last, First int64
	// Floor is the consumer's ack floor: every offset up to it is
	// acknowledged. Seeded is false when the consumer has no cursor row on
	// the partition yet: Floor is then where its subscription starts it
	// (consumer_seed_v1), and CommitAcks makes the row.
	Floor  int64
	Seeded bool
	// Acked are the offsets acknowledged above Floor, ascending.
	Acked []int64
	// Deliveries counts the deliveries of the offsets above Floor that
	// were delivered more than once (and, when stored, not yet
	// acknowledged).
	Deliveries map[int64]int
	// Delivered is the highest offset handed out (at least Floor): the
	// offsets above Floor up to it that are not in Acked were delivered,
	// once unless Deliveries says more, and not acknowledged.
	Delivered int64
}

// consumerPartitionsSQL reads the partitions of a JetStream consumer's
// queue with the consumer's state on each, in one statement. Nothing is
// locked. A consumer with no partition answers one row with a NULL
// partition; no row: no such consumer.
const consumerPartitionsSQL = `/* queen:js-partitions */ SELECT p.id, p.name, p.last_offset,
    coalesce((SELECT s.base_offset FROM queen.log_segments s WHERE s.partition_id = p.id ORDER BY s.end_offset LIMIT 1), p.last_offset + 1),
    c.cursor_offset IS NOT NULL, coalesce(c.cursor_offset, queen.consumer_seed_v1(p.id, j.queue_id, j.name)),
    c.acked_above, c.delivery_offsets, c.delivery_counts, coalesce(c.delivered_to, 0)
FROM queen.jetstream_consumers j
LEFT JOIN queen.log_partitions p ON p.queue_id = j.queue_id
LEFT JOIN queen.consumer_cursors c ON c.partition_id = p.id AND c.consumer_group = j.name
WHERE j.id = $1
ORDER BY p.id`

// ConsumerPartitions reads every partition of a JetStream consumer's queue
// with the consumer's floor, acknowledged offsets and delivery counts on
// it (consumerPartitionsSQL), in ascending partition id; ErrConsumerMissing
// when there is no such consumer. What is stored at or below the floor (a
// Queen acknowledgement of the same group moved it) is left out.
func (db *DB) ConsumerPartitions(ctx context.Context, consumerID int64) ([]JSPartition, error) {
	var out []JSPartition
	found := false
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		out, found = out[:0], false // a retry runs this again (withConn)
		rows, err := conn.Query(ctx, consumerPartitionsSQL, consumerID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			found = true
			var id, last, first, floor, delivered pgtype.Int8
			var name pgtype.Text
			var seeded pgtype.Bool
			var acked, offs []int64
			var counts []int32
			if err := rows.Scan(&id, &name, &last, &first, &seeded, &floor, &acked, &offs, &counts, &delivered); err != nil {
				return err
			}
			if !id.Valid {
				continue
			}
			p := JSPartition{ID: id.Int64, Name: name.String, Last: last.Int64, First: first.Int64, Floor: floor.Int64, Seeded: seeded.Bool,
				Delivered: max(delivered.Int64, floor.Int64)}
			for _, o := range acked {
				if o > p.Floor {
					p.Acked = append(p.Acked, o)
				}
			}
			if len(offs) != len(counts) {
				return fmt.Errorf("%w: partition %d: %d delivery offsets and %d counts", ErrBadResult, p.ID, len(offs), len(counts))
			}
			for i, o := range offs {
				if o > p.Floor {
					if p.Deliveries == nil {
						p.Deliveries = map[int64]int{}
					}
					p.Deliveries[o] = int(counts[i])
				}
			}
			out = append(out, p)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("pgwire: partitions of consumer %d: %w", consumerID, err)
	}
	if !found {
		return nil, fmt.Errorf("pgwire: partitions of consumer %d: %w", consumerID, ErrConsumerMissing)
	}
	return out, nil
}

// JSRange asks for the messages of a partition after an offset.
type JSRange struct {
	PartitionID int64
	After       int64
	// Limit bounds the messages (>= 1); MaxBytes their sizes summed
	// (JSSize), 0: no bound.
	Limit    int
	MaxBytes int64
}

// JSRun answers a JSRange: the messages after its offset, in offset order,
// with their segment's time (Message.CreatedAt).
type JSRun struct {
	PartitionID int64
	Messages    []Message
	// Next is the offset the run read up to: the next read of the
	// partition goes after it. Past the last message when tombstoned
	// offsets followed it; After when nothing was read.
	Next int64
	// Full: MaxBytes stopped the run; the message at Next + 1 did not fit
	// (with no message, the first message after After alone is larger).
	Full bool
}

// JSSize is what a message counts against a JSRange's MaxBytes.
func JSSize(f *segment.Frame) int64 { return int64(len(f.Payload)) }

// readAfterSQL reads, for many ranges, the segments holding the messages
// after each range's offset, in one statement: per range, the segments
// from the first after the offset up to the one holding the offset a
// limit further (from the first segment's base when retention left a gap;
// two index probes bound the scan, so a read of a few messages in long
// partitions scans no more segments than it returns), at most its limit
// of them (each after the offset holds at least one message), and of
// those only the ones a running count of their messages after the offset
// and a running sum of their stored (compressed) bytes still need: a
// segment whose predecessors' stored bytes reach the byte bound is not
// needed, since decoded messages are not smaller than what they are stored
// in. Each segment comes with the tombstoned offsets of its range's scan
// (one index probe per range, which finds nothing on a partition without
// tombstones; the same array on each of the range's segments). Parameters: parallel arrays of partition id, offset, limit
// and byte bound (0: none). Answer: range ordinal, segment base, time,
// payload, tombstoned offsets, by range and offset.
var readAfterSQL = statement("js_read_after")

// ReadAfter reads the messages after the offsets of many ranges, of any
// partitions, in one statement (readAfterSQL); out[i] answers ranges[i].
// A run holds at most Limit messages whose sizes (JSSize) sum to at most
// MaxBytes; it may hold fewer than Limit when there are more (tombstoned
// offsets are skipped and do not count, yet used the read's bound): read
// on after its Next. Offsets retention removed are skipped; a partition
// that does not exist reads as empty.
func (db *DB) ReadAfter(ctx context.Context, ranges []JSRange) ([]JSRun, error) {
	n := len(ranges)
	if n == 0 {
		return nil, nil
	}
	pids, afters, maxb := make([]int64, n), make([]int64, n), make([]int64, n)
	lims := make([]int32, n)
	for i, r := range ranges {
		if r.PartitionID <= 0 || r.After < 0 || r.Limit < 1 || r.MaxBytes < 0 {
			return nil, fmt.Errorf("pgwire: read range %d: partition id %d, after %d, limit %d, max bytes %d: "+
				"the id must be positive, the offset and byte bound not negative, the limit at least 1", i, r.PartitionID, r.After, r.Limit, r.MaxBytes)
		}
		pids[i], afters[i], lims[i], maxb[i] = r.PartitionID, r.After, int32(min(r.Limit, 1<<30)), r.MaxBytes
	}
	var out []JSRun
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		out = make([]JSRun, n) // a retry runs this again (withConn)
		sizes := make([]int64, n)
		for i, r := range ranges {
			out[i] = JSRun{PartitionID: r.PartitionID, Next: r.After}
		}
		rows, err := conn.Query(ctx, readAfterSQL, pids, afters, lims, maxb)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var ord, base int64
			var at time.Time
			var blob []byte
			var gone []int64
			if err := rows.Scan(&ord, &base, &at, &blob, &gone); err != nil {
				return err
			}
			if ord < 1 || ord > int64(n) {
				return fmt.Errorf("%w: read range %d out of range", ErrBadResult, ord)
			}
			i := ord - 1
			if err := appendRun(&out[i], &sizes[i], ranges[i], base, at, blob, gone); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("pgwire: read after offsets of %d partitions: %w", n, err)
	}
	return out, nil
}

// appendRun adds to run the messages of one segment (at base, of time at)
// after the range's offset, less the tombstoned offsets gone, up to the
// range's bounds; *size is the run's JSSize so far.
func appendRun(run *JSRun, size *int64, r JSRange, base int64, at time.Time, blob []byte, gone []int64) error {
	if run.Full || len(run.Messages) >= r.Limit {
		return nil
	}
	frames, err := segment.UnpackAll(blob)
	if err != nil {
		return fmt.Errorf("partition %d: segment at %d: %w", r.PartitionID, base, err)
	}
	for k := range frames {
		off := base + int64(k)
		if off <= run.Next {
			continue
		}
		for len(gone) > 0 && gone[0] < off {
			gone = gone[1:]
		}
		if len(gone) > 0 && gone[0] == off {
			run.Next = off
			continue
		}
		f := frames[k]
		if r.MaxBytes > 0 && *size+JSSize(&f) > r.MaxBytes {
			run.Full = true
			return nil
		}
		*size += JSSize(&f)
		run.Messages = append(run.Messages, Message{Offset: off, Frame: f, CreatedAt: at})
		run.Next = off
		if len(run.Messages) >= r.Limit {
			return nil
		}
	}
	return nil
}
