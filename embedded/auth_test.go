package embedded

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// ReachableTempDir is a temporary directory the postgres account can reach
// when the tests run as root (t.TempDir's parents are mode 0700). Exported
// for the package's external tests.
func ReachableTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "queen-embedded-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func authTestDir(t *testing.T) string { return filepath.Join(ReachableTempDir(t), "pg") }

func startForTest(t *testing.T, dataDir string) *Postgres {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := StartPostgres(ctx, Config{DataDir: dataDir, NoSync: true, Database: "queen"})
	if err != nil {
		t.Fatalf("StartPostgres: %v", err)
	}
	t.Cleanup(func() { pg.Stop(context.Background()) })
	return pg
}

// checkLockedDown: no connection without a password (as the superuser or
// the role), none with a wrong one, and the role is not a superuser and
// cannot run programs on the server.
func checkLockedDown(t *testing.T, pg *Postgres) {
	t.Helper()
	ctx := context.Background()
	for _, dsn := range []string{
		fmt.Sprintf("postgres://postgres@127.0.0.1:%d/queen?sslmode=disable", pg.Port()),
		fmt.Sprintf("postgres://%s@127.0.0.1:%d/queen?sslmode=disable", DefaultRole, pg.Port()),
		fmt.Sprintf("postgres://postgres:guess@127.0.0.1:%d/queen?sslmode=disable", pg.Port()),
	} {
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			conn.Close(ctx)
			t.Fatalf("connected with %s", strings.Replace(dsn, "guess", "a wrong password", 1))
		}
	}
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatalf("the role's DSN: %v", err)
	}
	defer conn.Close(ctx)
	var user string
	var super bool
	if err := conn.QueryRow(ctx, `SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&user, &super); err != nil {
		t.Fatal(err)
	}
	if user != DefaultRole || super {
		t.Fatalf("connected as %s, superuser %v", user, super)
	}
	marker := filepath.Join(os.TempDir(), fmt.Sprintf("queen-program-%d", time.Now().UnixNano()))
	if _, err := conn.Exec(ctx, fmt.Sprintf(`COPY (SELECT 1) TO PROGRAM 'touch %s'`, marker)); err == nil || !strings.Contains(err.Error(), "pg_execute_server_program") {
		t.Fatalf("COPY TO PROGRAM as the role: %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		os.Remove(marker)
		t.Fatal("the program ran")
	}
	// The role owns its database: it can make the schema the bridge needs.
	if _, err := conn.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS owned_check; CREATE TABLE IF NOT EXISTS owned_check.t (v int)`); err != nil {
		t.Fatalf("the role cannot create in its own database: %v", err)
	}
	info, err := os.Stat(pg.CredentialsFile())
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 || info.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) {
		t.Fatalf("credentials file mode %v, owner %d", info.Mode().Perm(), info.Sys().(*syscall.Stat_t).Uid)
	}
}

func TestEmbeddedPostgresNeedsPasswords(t *testing.T) {
	dir := authTestDir(t)
	pg := startForTest(t, dir)
	checkLockedDown(t, pg)
	// The passwords survive a restart (they are the file's).
	dsn := pg.DSN()
	if err := pg.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	pg2 := startForTest(t, dir)
	if pg2.DSN() != strings.Replace(dsn, fmt.Sprint(pg.Port()), fmt.Sprint(pg2.Port()), 1) {
		t.Fatal("the role's password changed across a restart")
	}
	checkLockedDown(t, pg2)
}

// A cluster made before passwords existed (trust, the superuser owning the
// queen schema) is converted at its first start.
func TestTrustClusterIsConverted(t *testing.T) {
	dir := authTestDir(t)
	cfg := Config{DataDir: dir, NoSync: true, OSUser: "postgres"}
	bin, err := FindPostgresBin()
	if err != nil {
		t.Fatal(err)
	}
	cfg.BinDir = bin
	var as *runAs
	if os.Geteuid() == 0 {
		if as, err = lookupRunAs(cfg.OSUser); err != nil {
			t.Fatal(err)
		}
	}
	if err := prepareDataDir(dir, as); err != nil {
		t.Fatal(err)
	}
	initTrust := exec.Command(filepath.Join(bin, "initdb"), "-D", dir, "-U", "postgres", "--auth=trust", "--no-sync", "--encoding=UTF8", "--locale=C")
	initTrust.SysProcAttr = &syscall.SysProcAttr{Credential: as.credential()}
	if out, err := initTrust.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	// Start it as the old code did: trust, a queen database and schema made
	// by the superuser.
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	old := &Postgres{cfg: cfg, exited: make(chan struct{}), creds: &credentials{}}
	old.cfg.Port = port
	if err := old.start(as); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := old.waitReady(ctx); err != nil {
		t.Fatal(err)
	}
	trustDSN := func(db string) string {
		return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", port, db)
	}
	conn, err := pgx.Connect(ctx, trustDSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE DATABASE queen`); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	conn, err = pgx.Connect(ctx, trustDSN("queen"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE SCHEMA queen; CREATE TABLE queen.kept (id bigserial PRIMARY KEY, v int);
		INSERT INTO queen.kept (v) VALUES (7); CREATE FUNCTION queen.f() RETURNS int LANGUAGE sql AS 'SELECT 1'`); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if err := old.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	pg := startForTest(t, dir)
	checkLockedDown(t, pg)
	conn, err = pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v, f int
	if err := conn.QueryRow(ctx, `INSERT INTO queen.kept (v) VALUES (8) RETURNING (SELECT sum(v) FROM queen.kept) + 8, queen.f()`).Scan(&v, &f); err != nil || v != 15 || f != 1 {
		t.Fatalf("the role on the converted schema: %d %d %v", v, f, err)
	}
	if _, err := conn.Exec(ctx, `CREATE OR REPLACE FUNCTION queen.f() RETURNS int LANGUAGE sql AS 'SELECT 2'`); err != nil {
		t.Fatalf("the role cannot replace a function it now owns: %v", err)
	}
}
