package pgwire

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/segment"
)

// BenchmarkConsumeBackendCPU compares what consuming a batch costs the
// PostgreSQL backend with what pushing it costs, at the same batch size
// (100 frames of 200 bytes): push is one bundle call writing the batch as
// one segment; consume is one pop of 100 by partition id (the one-statement
// pop, popKnownSQL) and its whole-batch acknowledgement (wholeAckCall, one
// cursor move), over a backlog stored in segments of `frames` frames;
// tail-ack is the claim of a pop the bridge serves from its hot tail
// (tailClaimCall: popTailOneSQL for one claim, no segment read) and its
// whole-batch acknowledgement;
// pop-autoack is a pop alone through consumer_pop_v1; cursor-update is the
// floor of a durable acknowledgement (one keyed row update, committed with
// and without waiting for the WAL flush). Metrics: backend-µs/call (a push, or a pop
// and its ack) and backend-µs/item.
// Run with: go test ./pgwire -run '^$' -bench ConsumeBackendCPU -benchtime 300x
func BenchmarkConsumeBackendCPU(b *testing.B) {
	dsn := testenv.NewDatabase(b)
	ctx := context.Background()
	db, err := Open(ctx, Config{DSN: dsn, MaxConns: 4})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	payload := []byte(`{"data":"` + strings.Repeat("x", 189) + `"}`)
	const batch = 100
	frames := func(queue string, from, n int) segment.Write {
		fr := make([]segment.Frame, n)
		for i := range fr {
			fr[i] = segment.Frame{ID: uuid.Must(uuid.NewV7()), TransactionID: fmt.Sprint("t", from+i), Payload: payload}
		}
		return segment.Write{Queue: queue, Partition: "p", Count: int32(n), Hashes: segment.AppendHashes(nil, fr), Blob: segment.Pack(nil, fr), Verified: 1 << 62}
	}
	// backlog pushes a queue of its own for a run (also under -count) with
	// (b.N+4)*batch frames in segments of per frames.
	backlog := func(b *testing.B, kind string, per int) string {
		queue := fmt.Sprintf("bench.%s%d.n%d.%s", kind, per, b.N, uuid.NewString()[:8])
		for off := 1; off <= (b.N+4)*batch; off += per {
			if _, err := db.PushBundle(ctx, []segment.Write{frames(queue, off, per)}); err != nil {
				b.Fatal(err)
			}
		}
		return queue
	}
	// seeded pushes a backlog and makes the group's first pop, which seeds
	// its cursor row (consumer_pop_v1): every later pop is by partition id.
	// It answers the partition's id and the cursor.
	seeded := func(b *testing.B, kind string, per int) (int64, int64) {
		queue := backlog(b, kind, per)
		first, err := db.Pop(ctx, PopRequest{Queue: queue, Partition: "p", Group: "g", Batch: batch, AutoAck: true})
		if err != nil || first.Status != PopDelivered {
			b.Fatalf("first pop: %+v %v", first, err)
		}
		return first.PartitionID, first.To
	}
	b.Run("push", func(b *testing.B) {
		next := 1
		cpu := backendCPU(b, dsn, 1, func(conn *pgx.Conn, _, _ int) error {
			w, err := newBundleArgs([]segment.Write{frames("bench.push", next, batch)}).call(ctx, conn)
			next += batch
			if err == nil {
				_, err = w.results(1)
			}
			return err
		})
		b.ReportMetric(cpu/batch, "backend-µs/item")
	})
	// The floor of any acknowledgement that survives a crash: one keyed
	// update of the group's cursor row and a synchronous commit (flush=on),
	// and the same update committed without waiting for the flush
	// (flush=off), so the difference is what the WAL flush costs the
	// backend.
	const update = `UPDATE queen.consumer_cursors SET acked_count = acked_count + 1 WHERE partition_id = $1 AND consumer_group = 'g'`
	for _, floor := range []struct{ name, sql string }{
		{"flush=on", update},
		{"flush=off", `WITH off AS (SELECT set_config('synchronous_commit', 'off', true)) ` + update + ` AND EXISTS (SELECT 1 FROM off)`},
	} {
		b.Run("cursor-update/"+floor.name, func(b *testing.B) {
			pid, _ := seeded(b, "floor", batch)
			cpu := backendCPU(b, dsn, 1, func(conn *pgx.Conn, _, _ int) error {
				tag, err := conn.Exec(ctx, floor.sql, pid)
				if err == nil && tag.RowsAffected() != 1 {
					err = fmt.Errorf("cursor update: %d rows", tag.RowsAffected())
				}
				return err
			})
			b.ReportMetric(cpu/batch, "backend-µs/item")
		})
	}
	for _, per := range []int{100, 10} {
		b.Run(fmt.Sprintf("pop-autoack/segment-frames=%d", per), func(b *testing.B) {
			queue := backlog(b, "auto", per)
			cpu := backendCPU(b, dsn, 1, func(conn *pgx.Conn, _, _ int) error {
				var status string
				var cursor, to int64
				if err := conn.QueryRow(ctx, `SELECT o_status, o_cursor, o_to FROM queen.consumer_pop_v1($1, $2, 'p', 0, 'g', NULL, $3, true, 'all', NULL)`,
					pgtype.UUID{Valid: true}, queue, batch).Scan(&status, &cursor, &to); err != nil {
					return err
				}
				if status != PopDelivered || to-cursor != batch {
					return fmt.Errorf("pop: %s, (%d, %d]", status, cursor, to)
				}
				return nil
			})
			b.ReportMetric(cpu/batch, "backend-µs/item")
		})
		b.Run(fmt.Sprintf("pop-ack/segment-frames=%d", per), func(b *testing.B) {
			pid, _ := seeded(b, "consume", per)
			tenant := pgtype.UUID{Valid: true}
			cpu := backendCPU(b, dsn, 1, func(conn *pgx.Conn, _, _ int) error {
				var status string
				var cursor, to pgtype.Int8
				lease := uuid.New()
				var name pgtype.Text
				var last pgtype.Int8
				var expires pgtype.Timestamptz
				var expired bool
				var gone []int64
				var base pgtype.Int8
				var created pgtype.Timestamptz
				var payload []byte
				rows, err := conn.Query(ctx, popKnownSQL, pid, tenant, "g", pgtype.UUID{Bytes: lease, Valid: true}, batch, false)
				if err != nil {
					return err
				}
				for rows.Next() {
					if err := rows.Scan(&status, &name, &last, &cursor, &to, &expires, &expired, &gone, &base, &created, &payload); err != nil {
						rows.Close()
						return err
					}
				}
				rows.Close()
				if rows.Err() != nil {
					return rows.Err()
				}
				if status != PopDelivered || to.Int64-cursor.Int64 != batch {
					return fmt.Errorf("pop: %s, (%d, %d]", status, cursor.Int64, to.Int64)
				}
				return benchWholeAck(ctx, conn, pid, lease, cursor.Int64, to.Int64)
			})
			b.ReportMetric(cpu/batch, "backend-µs/item")
		})
		b.Run(fmt.Sprintf("tail-ack/segment-frames=%d", per), func(b *testing.B) {
			// A pop the bridge serves from its hot tail: the claim
			// (popTailOneSQL, one partition, no segment read) and the
			// whole-batch acknowledgement.
			pid, cursor := seeded(b, "tail", per)
			cpu := backendCPU(b, dsn, 1, func(conn *pgx.Conn, _, _ int) error {
				lease := uuid.New()
				ids := benchTxnIDs(cursor, cursor+batch)
				claim := TailClaim{Group: "g", Lease: lease, PartitionID: pid, Cursor: cursor, To: cursor + batch, Count: batch,
					Hashes: AckHashes(ids), FirstEnd: cursor + int64(per)}
				sql, args := tailClaimCall([]TailClaim{claim}, false)
				rows, err := conn.Query(ctx, sql, args...)
				if err := oneRow(rows, err, fmt.Sprint("claim from the tail after ", cursor)); err != nil {
					return err
				}
				if err := benchWholeAck(ctx, conn, pid, lease, cursor, cursor+batch); err != nil {
					return err
				}
				cursor += batch
				return nil
			})
			b.ReportMetric(cpu/batch, "backend-µs/item")
		})
	}
}

// benchTxnIDs are the transactionIds the benchmark's frames carry at
// offsets (cursor, to].
func benchTxnIDs(cursor, to int64) []string {
	ids := make([]string, 0, to-cursor)
	for off := cursor + 1; off <= to; off++ {
		ids = append(ids, fmt.Sprint("t", off))
	}
	return ids
}

// benchWholeAck acknowledges what a lease delivered at (cursor, to] as one
// batch (wholeAckCall), failing unless it applied.
func benchWholeAck(ctx context.Context, conn *pgx.Conn, pid int64, lease uuid.UUID, cursor, to int64) error {
	sql, args := wholeAckCall([]WholeAck{{PID: pid, Group: "g", Lease: lease, Status: "completed", TransactionIDs: benchTxnIDs(cursor, to)}}, false)
	rows, err := conn.Query(ctx, sql, args...)
	return oneRow(rows, err, "whole-batch ack")
}

// oneRow drains the rows of a statement (err: its Query's), failing unless
// it answered exactly one.
func oneRow(rows pgx.Rows, err error, what string) error {
	if err != nil {
		return err
	}
	n := 0
	for rows.Next() {
		n++
	}
	rows.Close()
	if rows.Err() != nil || n != 1 {
		return fmt.Errorf("%s: %d rows, %v", what, n, rows.Err())
	}
	return nil
}
