package pgwire

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// FlushLatency measures how long the database takes to flush a commit: the
// round trip of a one-row update of queen.system_state's flush_probe row
// (its commit must wait for the WAL flush) less that of a read of the same
// row, the lowest of five each. Fusion sets
// how many bundles may be in flight from it (fusion.FlushMeter).
func (db *DB) FlushLatency(ctx context.Context) (time.Duration, error) {
	var out time.Duration
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		best := func(sql string) (time.Duration, error) {
			var low time.Duration
			for i := 0; i < 5; i++ {
				start := time.Now()
				if _, err := conn.Exec(ctx, sql); err != nil {
					return 0, err
				}
				if d := time.Since(start); i == 0 || d < low {
					low = d
				}
			}
			return low, nil
		}
		read, err := best(`SELECT value FROM queen.system_state WHERE key = 'flush_probe'`)
		if err != nil {
			return err
		}
		commit, err := best(`UPDATE queen.system_state SET value = to_jsonb(txid_current()), updated_at = now() WHERE key = 'flush_probe'`)
		if err != nil {
			return err
		}
		out = max(commit-read, time.Microsecond)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("pgwire: measure the commit flush: %w", err)
	}
	return out, nil
}
