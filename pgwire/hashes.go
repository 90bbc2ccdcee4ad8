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
		rows, err := conn.Query(ctx, `SELECT t.base_offset, t.created_at, t.hashes FROM queen.log_txns t
			WHERE t.partition_id = $1
			  AND t.end_offset > greatest($2, (SELECT p.txns_start - 1 FROM queen.log_partitions p WHERE p.id = $1))
			  AND t.base_offset <= $3
			  AND t.created_at >= clock_timestamp() - make_interval(secs => $4)
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
