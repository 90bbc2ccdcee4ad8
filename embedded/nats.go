package embedded

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// NATSConfig says where the in-process nats-server listens.
type NATSConfig struct {
	// Listen is host:port. A port of -1 (or "-1" alone) picks a free one.
	// Default: "127.0.0.1:4222".
	Listen string
	// ServerName names the server in cluster and monitoring output.
	// Default: chosen by nats-server.
	ServerName string
	// Cluster, when set, is the host:port of this server's cluster listener
	// (port -1 for a free one); Routes are the peers' cluster URLs
	// ("nats://127.0.0.1:6250"). Default: no clustering.
	Cluster     string
	ClusterName string
	Routes      []string
	// ConfigFile is a nats-server configuration file (accounts, users,
	// nkeys, TLS, ...) to start from; Listen applies when it sets no port.
	// Default: none.
	ConfigFile string
	// ReadyTimeout bounds the wait for the server to accept clients.
	// Default: 10s.
	ReadyTimeout time.Duration
	// JetStreamDir, when set, enables JetStream with file storage there:
	// for the tests and benchmarks that hold the bridge to a real JetStream
	// stream (the bridge itself never needs it). Default: no JetStream.
	JetStreamDir string
	// SyncAlways makes JetStream fsync every message before its ack
	// (sync_interval: always) instead of every two minutes. Default false.
	SyncAlways bool
	// LeafListen is host:port of the server's leafnode listener, the
	// bridge's own way of delivering messages the server refuses from a
	// client (replies under $JS.ACK.: JetStream consumers). It is for the
	// bridge alone: loopback, and the one user LeafUser with a password
	// made at start (LeafPassword). A port of -1 picks a free one.
	// Default "127.0.0.1:-1".
	LeafListen string
	// LeafPassword is the leaf user's password. Default: 24 random bytes
	// in hex, made at every start.
	LeafPassword string
	// LeafAccounts are accounts of ConfigFile that get a leaf user each,
	// bound to the account, with a password made at start (LeafLogins):
	// a leaf connection sees and reaches one account, so delivering to
	// the inboxes of several accounts takes one connection per account.
	// LeafUser stays, bound to the default account. Default none.
	LeafAccounts []string
}

// LeafUser is the user of the embedded server's leafnode listener.
const LeafUser = "queen-bridge"

// LeafLogin is a user of the leafnode listener bound to one account.
type LeafLogin struct {
	Account, User, Password string
}

// NATS is a running in-process nats-server.
type NATS struct {
	srv          *server.Server
	leafURL      string
	leafPassword string
	leafLogins   []LeafLogin
	stop         sync.Once
}

// StartNATS starts a nats-server in this process and waits until it accepts
// client connections.
func StartNATS(cfg NATSConfig) (*NATS, error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:4222"
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 10 * time.Second
	}
	if cfg.LeafListen == "" {
		cfg.LeafListen = "127.0.0.1:-1"
	}
	if cfg.LeafPassword == "" {
		cfg.LeafPassword = newPassword()
	}
	host, port, err := splitListen(cfg.Listen)
	if err != nil {
		return nil, err
	}
	leafHost, leafPort, err := splitListen(cfg.LeafListen)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: leafnode listen: %w", err)
	}
	opts := &server.Options{}
	if cfg.ConfigFile != "" {
		if opts, err = server.ProcessConfigFile(cfg.ConfigFile); err != nil {
			return nil, fmt.Errorf("embedded nats: %w", err)
		}
	}
	if opts.Port == 0 {
		opts.Host, opts.Port = host, port
	}
	if cfg.ServerName != "" {
		opts.ServerName = cfg.ServerName
	}
	if cfg.JetStreamDir != "" {
		opts.JetStream, opts.StoreDir, opts.SyncAlways = true, cfg.JetStreamDir, cfg.SyncAlways
	}
	if opts.LeafNode.Port != 0 {
		// One leafnode listener per server, and the bridge's must have
		// its own user and password.
		return nil, errors.New("embedded nats: the configuration file sets a leafnodes listener; the embedded server's listener is the bridge's own (use an external server, QUEEN_NATS_URL, to take other leaf nodes)")
	}
	opts.LeafNode.Host, opts.LeafNode.Port = leafHost, leafPort
	logins, err := leafUsers(opts, cfg)
	if err != nil {
		return nil, err
	}
	opts.NoSigs = true // the bridge owns signal handling
	// Every delivery of a JetStream consumer comes back as an ack on a
	// subject of its own: a subject-match cache would take each one in and
	// sweep it out again (about 3% of the bridge's CPU while a consumer
	// drains), and the clients' own per-connection caches keep the
	// subjects that repeat.
	opts.NoSublistCache = true
	opts.NoLog = true
	if cfg.Cluster != "" {
		ch, cp, err := splitListen(cfg.Cluster)
		if err != nil {
			return nil, fmt.Errorf("embedded nats: cluster listen: %w", err)
		}
		opts.Cluster.Host, opts.Cluster.Port, opts.Cluster.Name = ch, cp, cfg.ClusterName
		if opts.Cluster.Name == "" {
			opts.Cluster.Name = "queen"
		}
		opts.Routes = server.RoutesFromStr(strings.Join(cfg.Routes, ","))
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	watch := newListenWatch()
	srv.SetLoggerV2(watch, false, false, false)
	go srv.Start()
	if fatal, ok := watch.ready(srv, cfg.ReadyTimeout); !ok {
		srv.Shutdown()
		if fatal != "" {
			return nil, fmt.Errorf("%w: %s", ErrNATSListen, fatal)
		}
		return nil, fmt.Errorf("embedded nats: not ready on %s within %s", cfg.Listen, cfg.ReadyTimeout)
	}
	// A port of -1 is resolved when the listener opens; varz reports it.
	vz, err := srv.Varz(nil)
	if err != nil {
		srv.Shutdown()
		return nil, fmt.Errorf("embedded nats: leafnode port: %w", err)
	}
	leafURL := "nats-leaf://" + net.JoinHostPort(leafHost, strconv.Itoa(vz.LeafNode.Port))
	return &NATS{srv: srv, leafURL: leafURL, leafPassword: cfg.LeafPassword, leafLogins: logins}, nil
}

func splitListen(listen string) (string, int, error) {
	if listen == "-1" {
		return "127.0.0.1", -1, nil
	}
	host, ps, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, fmt.Errorf("embedded nats: listen address %q: %w", listen, err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < -1 || port > 65535 {
		return "", 0, errors.New("embedded nats: listen port must be -1..65535, got " + ps)
	}
	return host, port, nil
}

// ClientURL is the nats:// URL clients connect to.
func (n *NATS) ClientURL() string { return n.srv.ClientURL() }

// ClusterURL is the nats:// URL peers route to, or "" without clustering.
func (n *NATS) ClusterURL() string {
	addr := n.srv.ClusterAddr()
	if addr == nil {
		return ""
	}
	return "nats://" + addr.String()
}

// LeafURL is the nats-leaf:// URL of the server's leafnode listener
// (loopback), without credentials: LeafUser and LeafPassword log in.
func (n *NATS) LeafURL() string { return n.leafURL }

// LeafPassword is LeafUser's password on the leafnode listener: a secret.
func (n *NATS) LeafPassword() string { return n.leafPassword }

// LeafLogins are the leaf users of NATSConfig.LeafAccounts, in its
// order, each bound to its account: secrets.
func (n *NATS) LeafLogins() []LeafLogin { return append([]LeafLogin(nil), n.leafLogins...) }

// Server exposes the nats-server for tests that inspect routes or clients.
func (n *NATS) Server() *server.Server { return n.srv }

// Stop shuts the server down and waits for it. Idempotent.
func (n *NATS) Stop() {
	n.stop.Do(func() {
		n.srv.Shutdown()
		n.srv.WaitForShutdown()
	})
}
