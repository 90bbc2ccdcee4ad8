package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/queenbridge/queenbridge/embedded"
)

// env holds the servers of this test binary. The mutex guards lazy start and
// the final stop, which run on different goroutines (a test, then Main).
var env struct {
	mu      sync.Mutex
	pg      *embedded.Postgres
	pgDir   string
	pgDSN   string
	pgErr   error
	nats    *embedded.NATS
	natsURL string
	natsErr error
}

// Main runs the package's tests and stops whatever servers they started.
func Main(m *testing.M) {
	code := m.Run()
	env.mu.Lock()
	if env.nats != nil {
		env.nats.Stop()
	}
	if env.pg != nil {
		if err := env.pg.Stop(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "testenv:", err)
		}
		os.RemoveAll(env.pgDir)
	}
	env.mu.Unlock()
	os.Exit(code)
}

// PostgresDSN is the DSN of the binary's PostgreSQL cluster (its maintenance
// database). Tests that write should use NewDatabase instead.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	env.mu.Lock()
	defer env.mu.Unlock()
	if env.pgDSN == "" && env.pgErr == nil {
		env.pgDSN, env.pgErr = startPostgres()
	}
	if env.pgErr != nil {
		t.Fatalf("testenv: PostgreSQL: %v", env.pgErr)
	}
	return env.pgDSN
}

func startPostgres() (string, error) {
	if dsn := os.Getenv("TEST_PG_DSN"); dsn != "" {
		return dsn, nil
	}
	dir, err := os.MkdirTemp("", "queen-testenv-")
	if err != nil {
		return "", err
	}
	// The cluster runs as the postgres account when we are root; it must be
	// able to reach its data directory below this one.
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := embedded.StartPostgres(ctx, embedded.Config{
		DataDir:  filepath.Join(dir, "pg"),
		Database: "postgres",
		NoSync:   true,
		Settings: map[string]string{"max_connections": "300", "shared_buffers": "128MB"},
	})
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	env.pg, env.pgDir = pg, dir
	return pg.SuperuserDSN(), nil
}

// NewDatabase creates an empty database for this test, dropped when the test
// ends, and returns its DSN.
func NewDatabase(t testing.TB) string {
	t.Helper()
	admin := PostgresDSN(t)
	name := "t_" + randomHex(6)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := adminExec(ctx, admin, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("testenv: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := dropSlots(ctx, admin, name); err != nil {
			t.Logf("testenv: drop the replication slots of %s: %v", name, err)
		}
		if err := adminExec(ctx, admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("testenv: drop database %s: %v", name, err)
		}
	})
	return WithDatabase(admin, name)
}

// WithDatabase returns dsn pointing at database db instead.
func WithDatabase(dsn, db string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Path = "/" + db
		return u.String()
	}
	return strings.TrimSpace(dsn) + " dbname=" + db
}

// WithSetting returns dsn with a session setting added (a connection made
// from it sets name to value), in either form of a DSN.
func WithSetting(dsn, name, value string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set(name, value)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return strings.TrimSpace(dsn) + " " + name + "=" + value
}

// dropSlots drops the logical replication slots of database db (a publish
// relay's), which would otherwise keep DROP DATABASE from running and hold
// the cluster's WAL: their readers are ended first, and a slot whose reader
// is still going away is tried again until ctx ends.
func dropSlots(ctx context.Context, dsn, db string) error {
	for {
		err := adminExec(ctx, dsn, `SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots
				WHERE database = '`+db+`' AND active_pid IS NOT NULL;
			SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = '`+db+`' AND NOT active`)
		if err != nil {
			return err
		}
		var left bool
		if left, err = adminBool(ctx, dsn, `SELECT EXISTS (SELECT 1 FROM pg_replication_slots WHERE database = '`+db+`')`); err != nil || !left {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond): // the terminated reader lets go of its slot
		}
	}
}

func adminBool(ctx context.Context, dsn, sql string) (bool, error) {
	conn, err := pgconn.Connect(ctx, dsn)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	res := conn.ExecParams(ctx, sql, nil, nil, nil, nil).Read()
	if res.Err != nil {
		return false, res.Err
	}
	return len(res.Rows) == 1 && string(res.Rows[0][0]) == "t", nil
}

func adminExec(ctx context.Context, dsn, sql string) error {
	conn, err := pgconn.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql).ReadAll()
	return err
}

// NATSURL is the client URL of the binary's NATS server.
func NATSURL(t testing.TB) string {
	t.Helper()
	env.mu.Lock()
	defer env.mu.Unlock()
	if env.natsURL == "" && env.natsErr == nil {
		if u := os.Getenv("TEST_NATS_URL"); u != "" {
			env.natsURL = u
		} else if n, err := embedded.StartNATS(embedded.NATSConfig{Listen: "-1"}); err != nil {
			env.natsErr = err
		} else {
			env.nats, env.natsURL = n, n.ClientURL()
		}
	}
	if env.natsErr != nil {
		t.Fatalf("testenv: NATS: %v", env.natsErr)
	}
	return env.natsURL
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
