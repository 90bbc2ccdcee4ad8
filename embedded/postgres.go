package embedded

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Config says where and how to run a private PostgreSQL cluster.
type Config struct {
	// BinDir holds initdb and postgres. Default: FindPostgresBin().
	BinDir string
	// DataDir is the cluster directory; initdb runs when it holds no cluster.
	// Required.
	DataDir string
	// Port on 127.0.0.1. Default: 0, a free port chosen at start.
	Port int
	// Database is created when missing, owned by Role. Default: "queen".
	Database string
	// Role is the login role DSN connects as: not a superuser, the owner of
	// Database. Default: DefaultRole.
	Role string
	// OSUser runs initdb and postgres when the effective uid is 0.
	// Default: "postgres".
	OSUser string
	// Settings are extra `-c name=value` server settings; they override
	// DefaultSettings. Default: none.
	Settings map[string]string
	// NoSync passes --no-sync to initdb (tests). Default: false.
	NoSync bool
	// StartTimeout bounds initdb plus start-up. Default: 60s.
	StartTimeout time.Duration
}

// DefaultSettings are the server settings the embedded cluster runs with. They
// suit the write path: WAL large enough that checkpoints do not come every few
// seconds under load, more shared buffers than the stock 128 MB, loopback TCP
// only (no Unix socket, so no shared socket directory is needed), no JIT,
// and logical decoding (wal_level=logical, slots and WAL senders to spare)
// for the publish relay, which reads queen.publish messages from a slot.
// New WAL segment files are not zero-filled (wal_init_zero=off): a young
// cluster has no used segments to recycle yet, so each 16 MB of WAL makes
// a new file, and with zero-filling the commit that needs it waits while
// 16 MB of zeros are written and flushed (about 17 ms on the benchmark
// machine of docs/write-path.md, once every 1.7 s at a quarter of the push
// rate: most of a JetStream consumer's p99). Segments recycled after a
// checkpoint are never zero-filled in either case.
// Durability settings (fsync, synchronous_commit, full_page_writes) stay at
// PostgreSQL's defaults: an acknowledged push is on disk.
var DefaultSettings = map[string]string{
	"listen_addresses":        "127.0.0.1",
	"unix_socket_directories": "",
	"max_connections":         "200",
	"shared_buffers":          "256MB",
	"max_wal_size":            "4GB",
	"min_wal_size":            "256MB",
	"checkpoint_timeout":      "15min",
	"track_functions":         "pl",
	"log_min_messages":        "warning",
	"jit":                     "off", // compile time dwarfs every statement of this workload
	"wal_level":               "logical",
	"max_replication_slots":   "32",
	"wal_init_zero":           "off",
	"max_wal_senders":         "32",
}

// Postgres is a running private cluster.
type Postgres struct {
	cfg     Config
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the postmaster has exited
	waitErr error         // set before exited is closed
	logFile *os.File
	stop    sync.Once
	stopErr error
	creds   *credentials
}

// StartPostgres initialises (when needed) and starts a cluster, waits until it
// accepts connections and creates cfg.Database.
func StartPostgres(ctx context.Context, cfg Config) (*Postgres, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("embedded postgres: DataDir is required")
	}
	if cfg.Database == "" {
		cfg.Database = "queen"
	}
	if cfg.OSUser == "" {
		cfg.OSUser = "postgres"
	}
	if cfg.Role == "" {
		cfg.Role = DefaultRole
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	if cfg.BinDir == "" {
		dir, err := FindPostgresBin()
		if err != nil {
			return nil, describeMissing()
		}
		cfg.BinDir = dir
	} else if !hasServerBins(cfg.BinDir) {
		return nil, fmt.Errorf("%w in %s", ErrNoPostgres, cfg.BinDir)
	}
	abs, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("embedded postgres: data dir: %w", err)
	}
	cfg.DataDir = abs
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()

	var as *runAs
	if os.Geteuid() == 0 {
		if as, err = lookupRunAs(cfg.OSUser); err != nil {
			return nil, err
		}
		if !as.canTraverse(cfg.DataDir) {
			cfg.DataDir = fallbackDataDir(cfg.DataDir)
		}
	}
	// A live postmaster's lock file refuses the directory before anything
	// in it is touched: PostgreSQL would refuse it too, later.
	if pid, held := heldByAnother(cfg.DataDir, os.Getpid()); held {
		return nil, dataDirHeld(cfg.DataDir, pid)
	}
	if err := prepareDataDir(cfg.DataDir, as); err != nil {
		return nil, err
	}
	credsPath := credentialsPath(cfg.DataDir)
	creds, err := loadCredentials(credsPath)
	if err != nil {
		return nil, err
	}
	trust := false
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		if creds == nil {
			creds = &credentials{SuperuserPassword: newPassword(), RolePassword: newPassword()}
		}
		if err := creds.save(credsPath); err != nil {
			return nil, err
		}
		if err := initdb(ctx, cfg, as, creds.SuperuserPassword); err != nil {
			return nil, err
		}
	} else {
		if trust, err = trustsConnections(cfg.DataDir); err != nil {
			return nil, err
		}
		switch {
		case creds == nil && !trust:
			return nil, fmt.Errorf("embedded postgres: %s needs passwords and %s, which holds them, is missing", cfg.DataDir, credsPath)
		case creds == nil:
			creds = &credentials{SuperuserPassword: newPassword(), RolePassword: newPassword()}
			if err := creds.save(credsPath); err != nil {
				return nil, err
			}
		}
	}
	if cfg.Port == 0 {
		if cfg.Port, err = freePort(); err != nil {
			return nil, err
		}
	}
	p := &Postgres{cfg: cfg, exited: make(chan struct{}), creds: creds}
	if err := p.start(as); err != nil {
		return nil, err
	}
	if err := p.waitReady(ctx); err != nil {
		_ = p.Stop(context.Background())
		return nil, err
	}
	if trust {
		if err := p.convertTrust(ctx); err != nil {
			_ = p.Stop(context.Background())
			return nil, err
		}
	}
	if err := p.ensureRole(ctx); err != nil {
		_ = p.Stop(context.Background())
		return nil, err
	}
	return p, nil
}

func prepareDataDir(dir string, as *runAs) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("embedded postgres: create parent of %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("embedded postgres: create %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("embedded postgres: chmod %s: %w", dir, err)
	}
	if as != nil {
		if err := as.chownTree(dir); err != nil {
			return fmt.Errorf("embedded postgres: hand %s to %s: %w", dir, as.name, err)
		}
	}
	return nil
}

// initdb makes the cluster with password authentication, the superuser's
// password handed over in a file.
func initdb(ctx context.Context, cfg Config, as *runAs, password string) error {
	pw, remove, err := pwfile(password, as)
	if err != nil {
		return err
	}
	defer remove()
	args := []string{"-D", cfg.DataDir, "-U", "postgres", "--auth=scram-sha-256", "--pwfile=" + pw, "--encoding=UTF8", "--locale=C"}
	if cfg.NoSync {
		args = append(args, "--no-sync")
	}
	cmd := exec.CommandContext(ctx, filepath.Join(cfg.BinDir, "initdb"), args...)
	cmd.Dir = cfg.DataDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: as.credential()}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("embedded postgres: initdb %s: %w\n%s", cfg.DataDir, err, out)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("embedded postgres: pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (p *Postgres) serverArgs() []string {
	settings := map[string]string{}
	for k, v := range DefaultSettings {
		settings[k] = v
	}
	for k, v := range p.cfg.Settings {
		settings[k] = v
	}
	settings["port"] = strconv.Itoa(p.cfg.Port)
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := []string{"-D", p.cfg.DataDir}
	for _, k := range keys {
		args = append(args, "-c", k+"="+settings[k])
	}
	return args
}

// start launches the postmaster from a goroutine locked to its OS thread.
// Pdeathsig fires when the thread that forked the child exits, not the
// process; keeping that thread alive (locked) until the postmaster exits means
// the signal comes only when the whole Go process dies, which is the one case
// it is there for. The signal is SIGINT: PostgreSQL's fast shutdown.
func (p *Postgres) start(as *runAs) error {
	logPath := filepath.Join(p.cfg.DataDir, "server.log")
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("embedded postgres: open %s: %w", logPath, err)
	}
	p.logFile = lf
	cmd := exec.Command(filepath.Join(p.cfg.BinDir, "postgres"), p.serverArgs()...)
	cmd.Dir = p.cfg.DataDir
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: as.credential(),
		Pdeathsig:  syscall.SIGINT,
		Setpgid:    true, // a Ctrl-C in the terminal reaches the bridge, which stops us in order
	}
	p.cmd = cmd
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			close(p.exited)
			return
		}
		started <- nil
		p.waitErr = cmd.Wait()
		close(p.exited)
		// The thread is still locked, so it exits with this goroutine; that
		// is fine, the child it forked is gone.
	}()
	if err := <-started; err != nil {
		lf.Close()
		return fmt.Errorf("embedded postgres: start: %w", err)
	}
	return nil
}

func (p *Postgres) waitReady(ctx context.Context) error {
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgconn.Connect(cctx, p.adminDSN())
		cancel()
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-p.exited:
			if pid, held := heldByAnother(p.cfg.DataDir, p.cmd.Process.Pid); held {
				return dataDirHeld(p.cfg.DataDir, pid)
			}
			return fmt.Errorf("%w (%v); see %s", ErrPostgresExited, p.waitErr, filepath.Join(p.cfg.DataDir, "server.log"))
		case <-ctx.Done():
			return fmt.Errorf("embedded postgres: not ready: %w (last: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// DataDir is where the cluster lives (see the package doc on the fallback).
func (p *Postgres) DataDir() string { return p.cfg.DataDir }

// Port is the loopback TCP port the cluster listens on.
func (p *Postgres) Port() int { return p.cfg.Port }

// PID is the postmaster's process id.
func (p *Postgres) PID() int { return p.cmd.Process.Pid }

// Stop asks for a fast shutdown and waits for the postmaster to exit. When ctx
// ends first (or 30s pass without a deadline) it escalates to an immediate
// shutdown, then, 5s later, to SIGKILL. Stop is idempotent.
func (p *Postgres) Stop(ctx context.Context) error {
	p.stop.Do(func() {
		defer p.logFile.Close()
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
		}
		_ = p.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-p.exited:
			return
		case <-ctx.Done():
		}
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.exited:
			p.stopErr = errors.New("embedded postgres: fast shutdown timed out; used immediate shutdown")
			return
		case <-time.After(5 * time.Second):
		}
		_ = p.cmd.Process.Kill()
		<-p.exited
		p.stopErr = errors.New("embedded postgres: postmaster ignored SIGINT and SIGQUIT; killed")
	})
	return p.stopErr
}

// StopImmediate is what `pg_ctl stop -m immediate` does: SIGQUIT to the
// postmaster, no shutdown checkpoint; the next start runs crash recovery.
// Fault tests use it to take the database away under load. Like Stop, it
// happens once.
func (p *Postgres) StopImmediate() error {
	p.stop.Do(func() {
		defer p.logFile.Close()
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
			p.stopErr = errors.New("embedded postgres: ignored SIGQUIT; killed")
		}
	})
	return p.stopErr
}

// Exited is closed once the postmaster process has exited.
func (p *Postgres) Exited() <-chan struct{} { return p.exited }

func quoteIdent(s string) string {
	out := []byte{'"'}
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			out = append(out, '"')
		}
		out = append(out, s[i])
	}
	return string(append(out, '"'))
}
