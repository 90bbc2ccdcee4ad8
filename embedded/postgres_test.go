package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queenbridge/queenbridge/embedded"
)

func startPG(t *testing.T, dataDir string) *embedded.Postgres {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := embedded.StartPostgres(ctx, embedded.Config{DataDir: dataDir, NoSync: true, Database: "queen_test"})
	if err != nil {
		t.Fatalf("StartPostgres: %v", err)
	}
	return pg
}

func TestPostgresKeepsDataAcrossRestart(t *testing.T) {
	dir := filepath.Join(embedded.ReachableTempDir(t), "pg")
	pg := startPG(t, dir)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	pid := pg.PID()
	if err := pg.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := pg.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if alive(pid) {
		t.Fatalf("postmaster %d still running after Stop", pid)
	}

	pg2 := startPG(t, dir)
	defer pg2.Stop(ctx)
	conn, err = pgx.Connect(ctx, pg2.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v int
	if err := conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v); err != nil || v != 42 {
		t.Fatalf("after restart: v=%d err=%v", v, err)
	}
}

// The cluster runs with the write path's settings, and the durability
// settings stay at PostgreSQL's own: an acknowledged push is on disk.
func TestPostgresSettings(t *testing.T) {
	pg := startPG(t, filepath.Join(embedded.ReachableTempDir(t), "pg"))
	ctx := context.Background()
	defer pg.Stop(ctx)
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for name, want := range map[string]string{
		"wal_init_zero":      "off", // a new WAL segment is not zero-filled on a commit's path
		"jit":                "off",
		"wal_level":          "logical",
		"fsync":              "on",
		"synchronous_commit": "on",
		"full_page_writes":   "on",
	} {
		var got string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

func TestPostgresMissingBinaries(t *testing.T) {
	_, err := embedded.StartPostgres(context.Background(), embedded.Config{DataDir: t.TempDir(), BinDir: t.TempDir()})
	if !errors.Is(err, embedded.ErrNoPostgres) {
		t.Fatalf("want ErrNoPostgres, got %v", err)
	}
	if !strings.Contains(err.Error(), "apt-get install -y postgresql") {
		t.Fatalf("error should name the package to install: %v", err)
	}
}

func TestFindPostgresBin(t *testing.T) {
	dir, err := embedded.FindPostgresBin()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"initdb", "postgres"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("%s missing in %s", name, dir)
		}
	}
}

// TestPostmasterGoneAfterProcessExit runs this test binary again as a helper
// that starts a cluster and then ends in one of three ways; after the helper
// is gone, its postmaster must be gone too.
func TestPostmasterGoneAfterProcessExit(t *testing.T) {
	for _, mode := range []string{"stop", "exit-without-stop", "sigkill"} {
		t.Run(mode, func(t *testing.T) {
			dir := embedded.ReachableTempDir(t)
			pidFile := filepath.Join(dir, "postmaster.pid.txt")
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.v")
			cmd.Env = append(os.Environ(), "QUEEN_EMBEDDED_HELPER="+mode, "QUEEN_EMBEDDED_HELPER_DIR="+dir)
			out := &strings.Builder{}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := waitPIDFile(t, pidFile, cmd)
			if mode == "sigkill" {
				_ = cmd.Process.Kill()
			}
			_ = cmd.Wait()
			deadline := time.Now().Add(30 * time.Second)
			for alive(pid) {
				if time.Now().After(deadline) {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("postmaster %d outlived its process (%s); helper output:\n%s", pid, mode, out)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

func waitPIDFile(t *testing.T, path string, cmd *exec.Cmd) int {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	t.Fatal("helper never wrote the postmaster pid")
	return 0
}

func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("QUEEN_EMBEDDED_HELPER")
	if mode == "" {
		t.Skip("helper for TestPostmasterGoneAfterProcessExit; runs only when re-executed by it")
	}
	dir := os.Getenv("QUEEN_EMBEDDED_HELPER_DIR")
	pg := startPG(t, filepath.Join(dir, "pg"))
	if err := os.WriteFile(filepath.Join(dir, "postmaster.pid.txt"), []byte(fmt.Sprintf("%d\n", pg.PID())), 0o644); err != nil {
		t.Fatal(err)
	}
	switch mode {
	case "stop":
		if err := pg.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	case "exit-without-stop":
		os.Exit(0)
	case "sigkill":
		select {} // the parent kills us
	}
}

// alive reports whether pid is a running process (a zombie counts as gone:
// the container's init may be slow to reap it).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// A data directory below a parent of mode 0700 (like /root): run as root,
// PostgreSQL runs as the postgres account, which cannot reach it, so the
// cluster goes to a stable place under /var/lib/queenbridge and DataDir says
// so. Run as anyone else, PostgreSQL runs as that user and uses it.
func TestUnreachableDataDirFallsBack(t *testing.T) {
	private := t.TempDir() // mode 0700, owned by the user running the tests
	want := filepath.Join(private, "pg")
	pg := startPG(t, want)
	defer func() {
		pg.Stop(context.Background())
		if pg.DataDir() != want {
			os.RemoveAll(pg.DataDir())
		}
	}()
	if os.Geteuid() != 0 {
		if pg.DataDir() != want {
			t.Fatalf("not root: data dir %s, want %s", pg.DataDir(), want)
		}
		return
	}
	if pg.DataDir() == want || !strings.HasPrefix(pg.DataDir(), "/var/lib/queenbridge/pg-") {
		t.Fatalf("data dir %s, want a fallback under /var/lib/queenbridge", pg.DataDir())
	}
}

// A second cluster started on a data directory a running postmaster holds
// is refused with the directory and the reason, not "postgres exited",
// before it touches a file in the directory (as root a start hands the
// whole tree to the postgres account; that walk races the running
// cluster's own writes).
func TestPostgresDataDirInUse(t *testing.T) {
	dir := filepath.Join(embedded.ReachableTempDir(t), "pg")
	pg := startPG(t, dir)
	defer func() { _ = pg.Stop(context.Background()) }()
	marker := filepath.Join(pg.DataDir(), "queen-test-marker")
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	second, err := embedded.StartPostgres(ctx, embedded.Config{DataDir: dir, NoSync: true, Database: "queen_test"})
	if err == nil {
		_ = second.Stop(context.Background())
		t.Fatal("a second postmaster started on a data directory in use")
	}
	if !errors.Is(err, embedded.ErrDataDirInUse) {
		t.Fatalf("second start: %v, want ErrDataDirInUse", err)
	}
	if msg := err.Error(); !strings.Contains(msg, pg.DataDir()) || !strings.Contains(msg, "held by another process") ||
		!strings.Contains(msg, strconv.Itoa(pg.PID())) {
		t.Fatalf("the error does not name %s, its holder %d and why: %v", pg.DataDir(), pg.PID(), err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(marker, &st); err != nil {
		t.Fatal(err)
	}
	if int(st.Uid) != os.Geteuid() {
		t.Fatalf("the refused start handed %s to uid %d", marker, st.Uid)
	}
	// The first cluster is untouched.
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatalf("the first cluster after the refused start: %v", err)
	}
	_ = conn.Close(ctx)
}
