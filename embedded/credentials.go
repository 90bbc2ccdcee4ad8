package embedded

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// The embedded cluster is not open: connections need a password
// (scram-sha-256), generated when the cluster is made and kept in a file
// beside the data directory that only the service's own OS user can read
// (mode 0600). The service connects as Role, which owns its database and is
// not a superuser (it cannot, say, run COPY ... TO PROGRAM); the superuser's
// password is in the same file, for an operator.
//
// A cluster made before passwords existed (trust authentication) is
// converted at its first start: the superuser gets a password, pg_hba.conf
// switches to scram-sha-256 and is reloaded, and the role takes over the
// database and the objects of its queen schema.

// DefaultRole is the role the service connects as.
const DefaultRole = "queen_bridge"

// credentials are the passwords of one cluster.
type credentials struct {
	SuperuserPassword string
	RolePassword      string
}

// credentialsPath is where a data directory's credentials live: beside it,
// not in it (initdb wants an empty directory; the server has no use for it).
func credentialsPath(dataDir string) string {
	return filepath.Join(filepath.Dir(dataDir), filepath.Base(dataDir)+".credentials")
}

func newPassword() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("embedded postgres: no randomness for a password: %v", err))
	}
	return hex.EncodeToString(b)
}

// loadCredentials reads the file; a missing file is (nil, nil).
func loadCredentials(path string) (*credentials, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("embedded postgres: credentials: %w", err)
	}
	defer f.Close()
	c := &credentials{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		switch {
		case !ok:
		case k == "superuser_password":
			c.SuperuserPassword = v
		case k == "role_password":
			c.RolePassword = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("embedded postgres: credentials %s: %w", path, err)
	}
	if c.SuperuserPassword == "" || c.RolePassword == "" {
		return nil, fmt.Errorf("embedded postgres: credentials %s: a password is missing", path)
	}
	return c, nil
}

// save writes the file, readable by this process's user only.
func (c *credentials) save(path string) error {
	body := "# passwords of the embedded PostgreSQL cluster beside this file\n" +
		"superuser_password=" + c.SuperuserPassword + "\n" +
		"role_password=" + c.RolePassword + "\n"
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		return fmt.Errorf("embedded postgres: write credentials: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("embedded postgres: write credentials: %w", err)
	}
	return nil
}

// pwfile writes the superuser password where initdb (running as as) can
// read it, and returns the path and a function that removes it.
func pwfile(password string, as *runAs) (string, func(), error) {
	f, err := os.CreateTemp("", "queen-pw-")
	if err != nil {
		return "", nil, fmt.Errorf("embedded postgres: password file for initdb: %w", err)
	}
	remove := func() { os.Remove(f.Name()) }
	_, err = f.WriteString(password + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && as != nil {
		err = os.Chown(f.Name(), int(as.uid), int(as.gid))
	}
	if err != nil {
		remove()
		return "", nil, fmt.Errorf("embedded postgres: password file for initdb: %w", err)
	}
	return f.Name(), remove, nil
}

// trustsConnections reports whether pg_hba.conf lets anyone in without a
// password (a cluster made before passwords existed).
func trustsConnections(dataDir string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "pg_hba.conf"))
	if err != nil {
		return false, fmt.Errorf("embedded postgres: read pg_hba.conf: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(f[0], "#") && f[len(f)-1] == "trust" {
			return true, nil
		}
	}
	return false, nil
}

// requirePasswords rewrites the trust lines of pg_hba.conf to scram-sha-256,
// keeping the file's owner and mode.
func requirePasswords(dataDir string) error {
	path := filepath.Join(dataDir, "pg_hba.conf")
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("embedded postgres: read pg_hba.conf: %w", err)
	}
	lines := strings.Split(string(b), "\n")
	for i, line := range lines {
		f := strings.Fields(line)
		if len(f) > 0 && !strings.HasPrefix(f[0], "#") && f[len(f)-1] == "trust" {
			lines[i] = strings.TrimSuffix(strings.TrimRight(line, " \t"), "trust") + "scram-sha-256"
		}
	}
	// WriteFile keeps an existing file's owner and mode.
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		return fmt.Errorf("embedded postgres: write pg_hba.conf: %w", err)
	}
	return nil
}

// dsn connects to db on the cluster as user with password.
func (p *Postgres) dsn(user, password, db string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(user, password), Host: fmt.Sprintf("127.0.0.1:%d", p.cfg.Port), Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// DSN connects to the cluster's database as Role: its owner, not a
// superuser. It holds the role's password.
func (p *Postgres) DSN() string { return p.dsn(p.cfg.Role, p.creds.RolePassword, p.cfg.Database) }

// SuperuserDSN connects to the cluster's database as the superuser, for
// administration and test harnesses. It holds the superuser's password.
func (p *Postgres) SuperuserDSN() string {
	return p.dsn("postgres", p.creds.SuperuserPassword, p.cfg.Database)
}

func (p *Postgres) adminDSN() string { return p.dsn("postgres", p.creds.SuperuserPassword, "postgres") }

// CredentialsFile is the file that holds the cluster's passwords.
func (p *Postgres) CredentialsFile() string { return credentialsPath(p.cfg.DataDir) }

// convertTrust gives a trust cluster's superuser its password and switches
// pg_hba.conf to passwords (the server is running; it reloads).
func (p *Postgres) convertTrust(ctx context.Context) error {
	trustDSN := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.cfg.Port)
	conn, err := pgconn.Connect(ctx, trustDSN)
	if err != nil {
		return fmt.Errorf("embedded postgres: connect to convert a trust cluster: %w", err)
	}
	defer conn.Close(context.Background())
	if err := conn.Exec(ctx, "ALTER ROLE postgres PASSWORD "+quoteLiteral(p.creds.SuperuserPassword)).Close(); err != nil {
		return fmt.Errorf("embedded postgres: set the superuser's password: %w", err)
	}
	if err := requirePasswords(p.cfg.DataDir); err != nil {
		return err
	}
	if err := conn.Exec(ctx, "SELECT pg_reload_conf()").Close(); err != nil {
		return fmt.Errorf("embedded postgres: reload pg_hba.conf: %w", err)
	}
	return nil
}

// ensureRole creates Role (or resets its password to the file's), with the
// REPLICATION attribute that the publish relay's slot needs, gives it
// the database and, where an older cluster left them to the superuser, the
// queen schema and everything in it.
func (p *Postgres) ensureRole(ctx context.Context) error {
	conn, err := pgconn.Connect(ctx, p.adminDSN())
	if err != nil {
		return fmt.Errorf("embedded postgres: connect: %w", err)
	}
	defer conn.Close(context.Background())
	role, pw := quoteIdent(p.cfg.Role), quoteLiteral(p.creds.RolePassword)
	sql := fmt.Sprintf(`DO $$ BEGIN
		IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = %s) THEN
			CREATE ROLE %s LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE REPLICATION PASSWORD %s;
		ELSE
			ALTER ROLE %s LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE REPLICATION PASSWORD %s;
		END IF;
	END $$`, quoteLiteral(p.cfg.Role), role, pw, role, pw)
	if err := conn.Exec(ctx, sql).Close(); err != nil {
		return fmt.Errorf("embedded postgres: role %s: %w", p.cfg.Role, err)
	}
	db := quoteIdent(p.cfg.Database)
	res := conn.ExecParams(ctx, "SELECT 1 FROM pg_database WHERE datname = $1", [][]byte{[]byte(p.cfg.Database)}, nil, nil, nil).Read()
	if res.Err != nil {
		return fmt.Errorf("embedded postgres: look up database: %w", res.Err)
	}
	stmt := "CREATE DATABASE " + db + " OWNER " + role
	if len(res.Rows) > 0 {
		stmt = "ALTER DATABASE " + db + " OWNER TO " + role
	}
	if err := conn.Exec(ctx, stmt).Close(); err != nil {
		return fmt.Errorf("embedded postgres: database %s: %w", db, err)
	}
	return p.handOverSchema(ctx)
}

// handOverSchema gives Role the queen schema and its tables and functions
// when the superuser owns them (made by a bridge that connected as the
// superuser). Sequences follow their tables.
func (p *Postgres) handOverSchema(ctx context.Context) error {
	conn, err := pgconn.Connect(ctx, p.dsn("postgres", p.creds.SuperuserPassword, p.cfg.Database))
	if err != nil {
		return fmt.Errorf("embedded postgres: connect: %w", err)
	}
	defer conn.Close(context.Background())
	sql := fmt.Sprintf(`DO $$
	DECLARE r record;
	BEGIN
		IF EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'queen' AND nspowner <> %[1]s::regrole) THEN
			EXECUTE format('ALTER SCHEMA queen OWNER TO %%I', %[1]s);
			FOR r IN SELECT c.oid::regclass AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			         WHERE n.nspname = 'queen' AND c.relkind IN ('r', 'p', 'v', 'm') LOOP
				EXECUTE format('ALTER TABLE %%s OWNER TO %%I', r.name, %[1]s);
			END LOOP;
			FOR r IN SELECT p.oid::regprocedure AS sig FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
			         WHERE n.nspname = 'queen' LOOP
				EXECUTE format('ALTER ROUTINE %%s OWNER TO %%I', r.sig, %[1]s);
			END LOOP;
		END IF;
	END $$`, quoteLiteral(p.cfg.Role))
	if err := conn.Exec(ctx, sql).Close(); err != nil {
		return fmt.Errorf("embedded postgres: hand the queen schema to %s: %w", p.cfg.Role, err)
	}
	return nil
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
