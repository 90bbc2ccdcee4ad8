package pgwire

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/segment"
)

// StoredHashes returns the hashes of the frames stored in partition pid at
// offsets in (after, upTo] whose segments are younger than window seconds,
// and never below the partition's txns_start. Fusion reads a range written
// by another writer once, so that its probe can skip it from then on.
func (db *DB) StoredHashes(ctx context.Context, pid, after, upTo int64, window int32) ([]segment.HashAt, error) {
	var out []segment.HashAt
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		out = out[:0] // a retry runs this again (withConn)
		// Both places a hash blob can be: the segment rows (from migration
		// 0006 on) and log_txns (before it, and removed segments).
		rows, err := conn.Query(ctx, `WITH p AS (SELECT greatest($2, txns_start - 1) AS lo FROM queen.log_partitions WHERE id = $1)
			SELECT t.base_offset, t.created_at, t.hashes FROM (
				SELECT s.base_offset, s.end_offset, s.created_at, s.hashes FROM queen.log_segments s, p
				WHERE s.partition_id = $1 AND s.end_offset > p.lo AND s.base_offset <= $3 AND s.hashes IS NOT NULL
				  AND s.created_at >= clock_timestamp() - make_interval(secs => $4)
				UNION ALL
				SELECT x.base_offset, x.end_offset, x.created_at, x.hashes FROM queen.log_txns x, p
				WHERE x.partition_id = $1 AND x.end_offset > p.lo AND x.base_offset <= $3
				  AND x.created_at >= clock_timestamp() - make_interval(secs => $4)) t
			ORDER BY t.end_offset`, pid, after, upTo, window)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var base int64
			var at time.Time
			var hashes []byte
			if err := rows.Scan(&base, &at, &hashes); err != nil {
				return err
			}
			for k := 0; k+segment.HashSize <= len(hashes); k += segment.HashSize {
				off := base + int64(k/segment.HashSize)
				if off <= after || off > upTo {
					continue
				}
				var h [segment.HashSize]byte
				copy(h[:], hashes[k:])
				out = append(out, segment.HashAt{Hash: h, Offset: off, At: at})
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("pgwire: stored hashes of partition %d in (%d, %d]: %w", pid, after, upTo, err)
	}
	return out, nil
}
