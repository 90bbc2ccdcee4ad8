package schema

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A migration waits its turn. Each of its statements runs with a short
// lock_timeout (Config.LockTimeout): a statement that wants a lock
// a live statement holds waits that long at most, and while it waits, the
// statements queued behind it in PostgreSQL's lock queue wait too; then it
// gives up (SQLSTATE 55P03), lets them through, and the runner tries again
// after a growing pause. Meanwhile the bridges serve. The lock timeout is
// shorter than PostgreSQL's deadlock_timeout (1s by default), so a
// migration queued in a cycle gives up before PostgreSQL would have to kill
// someone.
//
// Each try is watched from another connection: what the migration's
// session waits for (pg_locks) and who holds it (pg_blocking_pids), so
// that Config.OnWait can say which lock a migration that keeps
// waiting is waiting on.

// Wait is what the runner reports when a migration step gave up
// waiting for a lock and will try again.
type Wait struct {
	// Step is what waited: the migration lock, the migration transaction,
	// or one statement of a migration that runs outside a transaction.
	Step string
	// Tries counts the tries that gave up so far; Waited is the time since
	// the step's first try.
	Tries  int
	Waited time.Duration
	// Lock is the lock the step was seen waiting for ("AccessExclusiveLock
	// on relation queen.log_partitions"); "" when no wait was seen.
	Lock string
	// Blockers are the sessions that held it: pid, application, state and
	// the start of their query.
	Blockers []string
}

func (w Wait) String() string {
	return fmt.Sprintf("%s: gave up waiting for a lock %d times in %s (waiting for %q, held by %q)",
		w.Step, w.Tries, w.Waited.Round(time.Millisecond), w.Lock, w.Blockers)
}

// lockNotAvailable says whether err is PostgreSQL's lock timeout.
func lockNotAvailable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03"
}

// Backoff between tries of a step: from migrationBackoff, doubling, up to
// migrationBackoffMax, with up to half again at random so that bridges
// starting together do not keep meeting.
const (
	migrationBackoff    = 50 * time.Millisecond
	migrationBackoffMax = 2 * time.Second
)

// untilLocked runs try until it does not fail for want of a lock, with a
// pause between tries, reporting each give-up; ctx bounds it. conn is the
// migration's session, whose waits are watched.
func (mg *migrator) untilLocked(ctx context.Context, conn *pgx.Conn, step string, try func() error) error {
	start := time.Now()
	pause := migrationBackoff
	for tries := 1; ; tries++ {
		seen, err := mg.watched(ctx, conn.PgConn().PID(), try)
		if !lockNotAvailable(err) {
			return err
		}
		if mg.cfg.OnWait != nil {
			mg.cfg.OnWait(Wait{Step: step, Tries: tries, Waited: time.Since(start), Lock: seen.lock, Blockers: seen.blockers})
		}
		t := time.NewTimer(pause + rand.N(pause/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("schema: %s: still waiting for %s after %d tries: %w", step, seen.lock, tries, ctx.Err())
		case <-t.C:
		}
		pause = min(2*pause, migrationBackoffMax)
	}
}

// lockSeen is what the watcher last saw the migration session wait for.
type lockSeen struct {
	lock     string
	blockers []string
}

// watched runs try while a goroutine looks, four times per lock timeout,
// at what the session pid waits for; it answers the last wait seen. The
// goroutine is stopped before watched returns.
func (mg *migrator) watched(ctx context.Context, pid uint32, try func() error) (lockSeen, error) {
	var (
		mu   sync.Mutex // guards seen: written by the watcher, read after it stopped
		seen lockSeen
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(max(mg.cfg.LockTimeout/4, 5*time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if s, ok := mg.waitOf(ctx, pid); ok {
				mu.Lock()
				seen = s
				mu.Unlock()
			}
		}
	}()
	err := try()
	close(stop)
	wg.Wait()
	return seen, err
}

// waitOf reads the lock session pid waits for and the sessions that hold
// it; ok is false when it waits for none (or the look failed: the report
// is then without it).
func (mg *migrator) waitOf(ctx context.Context, pid uint32) (lockSeen, bool) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var s lockSeen
	err := mg.pool.QueryRow(ctx, `SELECT l.mode || ' on ' || l.locktype
			|| coalesce(' ' || l.relation::regclass::text, '') || coalesce(' ' || l.virtualxid, '')
			|| CASE WHEN l.locktype = 'advisory' THEN ' ' || l.objid ELSE '' END,
			coalesce((SELECT array_agg(format('pid %s (%s, %s): %s', a.pid, a.application_name, a.state, left(a.query, 120)) ORDER BY a.pid)
			          FROM pg_stat_activity a WHERE a.pid = ANY (pg_blocking_pids($1))), '{}')
		FROM pg_locks l WHERE l.pid = $1 AND NOT l.granted LIMIT 1`, int32(pid)).Scan(&s.lock, &s.blockers)
	return s, err == nil
}
