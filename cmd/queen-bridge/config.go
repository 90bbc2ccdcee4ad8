package main

import (
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/embedded"
	"github.com/queenbridge/queenbridge/internal/leaf"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jetstream"
	"github.com/queenbridge/queenbridge/publish"
)

// config is every setting of the binary. Each has an environment variable
// and a flag of the same name in lower case with dashes
// (QUEEN_HTTP_ADDR -> -http-addr); a flag wins over the variable.
type config struct {
	// deprecated says which deprecated names were used, for main to log
	// once the logger exists.
	deprecated []string

	natsListen, natsURL, natsPrefix string
	natsConfig, natsAccounts        string
	jetstream                       string
	publish                         bool
	publishDSN                      string
	publishMaxLagBytes              int64
	publishMaxLagMS                 int
	natsUser, natsPassword          string
	natsCreds, natsNkey             string
	natsTLSCA, natsTLSCert          string
	natsTLSKey                      string
	natsLeafURL, natsLeafUser       string
	natsLeafPassword                string
	natsLeafAccounts                string
	pgDSN                           string
	pgPoolSize                      int
	pgStatementTimeoutMS            int
	spoolMaxBytes                   int64
	httpAddr                        string
	dataDir, spoolDir               string
	shards, bundleMax, holdMS       int
	bundleMaxBytes                  int64
	inFlightMin, inFlightMax        int
	recentHashBytes, tailCacheBytes int64
	hotlist                         bool
	retentionMS                     int
	maxBodyBytes, maxInflightBytes  int64
	bodyTimeoutMS, maxParkedReads   int
	maxPartitionsPerRequest         int
	txnMaxOperations                int
	buckets, heartbeatMS            int
	forwardTimeoutMS                int
	forwardGatherUS                 int
	dedupWindowS                    int
	defaultSubscriptionMode         string
	encryptionKeyHex                string
	httpTokens, httpAdminTokens     string
	metricsAddr                     string
	encryptionKeyFile               string
	logLevel, logFormat             string
	shutdownTimeout                 time.Duration
	pprofAddr                       string
	gcPercent                       int
	adaptiveProcs                   bool
}

type setting struct {
	env, def, help string
	set            func(string) error
}

// oldNames are the deprecated names of renamed settings, still read, with
// their flags, for one release; the new name wins when both are set. The
// QUEEN_V2_ names are the fusion settings' names of the first release.
var oldNames = map[string]string{
	"QUEEN_FUSION_SHARDS":         "QUEEN_V2_FUSION_SHARDS",
	"QUEEN_BUNDLE_MAX":            "QUEEN_V2_BUNDLE_MAX",
	"QUEEN_FUSION_HOLD_MS":        "QUEEN_V2_FUSION_HOLD_MS",
	"QUEEN_BUNDLES_IN_FLIGHT_MIN": "QUEEN_VEGAS_MIN",
	"QUEEN_BUNDLES_IN_FLIGHT_MAX": "QUEEN_VEGAS_MAX",
}

func (c *config) settings() []setting {
	str := func(p *string) func(string) error { return func(v string) error { *p = v; return nil } }
	num := func(p *int) func(string) error {
		return func(v string) error {
			n, err := strconv.Atoi(v)
			*p = n
			return err
		}
	}
	num64 := func(p *int64) func(string) error {
		return func(v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			*p = n
			return err
		}
	}
	return []setting{
		{"QUEEN_NATS_LISTEN", "127.0.0.1:4222", "address of the embedded NATS server (when QUEEN_NATS_URL is empty)", str(&c.natsListen)},
		{"QUEEN_NATS_URL", "", "connect to this NATS (comma list) instead of embedding one", str(&c.natsURL)},
		{"QUEEN_NATS_PREFIX", "queen", "subject prefix", str(&c.natsPrefix)},
		{"QUEEN_NATS_CONFIG", "", "nats-server configuration file for the embedded server (accounts, users, TLS); its listen wins over QUEEN_NATS_LISTEN", str(&c.natsConfig)},
		{"QUEEN_JETSTREAM", "", "JetStream streams the bridge takes publishes for: NAME=FILTER[;FILTER...],... (ORDERS=orders.>,AUDIT=audit.*.events); NAME is the queue, the wildcards' tokens the partition (empty: off)", str(&c.jetstream)},
		{"QUEEN_PUBLISH", "1", "relay queen.publish messages written in the log's own database (0: not; needs wal_level=logical, docs/publish.md)", func(v string) error {
			b, err := strconv.ParseBool(v)
			c.publish = b
			return err
		}},
		{"QUEEN_PUBLISH_DSN", "", "other databases whose queen.publish messages the bridge relays: DSN,... (each needs wal_level=logical and a role with REPLICATION)", str(&c.publishDSN)},
		{"QUEEN_PUBLISH_MAX_LAG_BYTES", strconv.Itoa(1 << 30), "a relayed slot further behind than this many bytes of WAL is reported on /health and in the console", num64(&c.publishMaxLagBytes)},
		{"QUEEN_PUBLISH_MAX_LAG_MS", "60000", "a relayed slot whose oldest unstored committed message is older than this, ms, is reported on /health and in the console", num(&c.publishMaxLagMS)},
		{"QUEEN_NATS_ACCOUNTS", "", "accounts mode: NATS account=tenant-uuid,... (a request's tenant is its account's; empty: one account, every client trusted)", str(&c.natsAccounts)},
		{"QUEEN_NATS_USER", "", "user the bridge connects to NATS as", str(&c.natsUser)},
		{"QUEEN_NATS_PASSWORD", "", "that user's password", str(&c.natsPassword)},
		{"QUEEN_NATS_CREDS", "", "NATS credentials file (JWT and nkey seed) the bridge connects with", str(&c.natsCreds)},
		{"QUEEN_NATS_NKEY", "", "nkey seed file the bridge connects with", str(&c.natsNkey)},
		{"QUEEN_NATS_TLS_CA", "", "CA certificate file that NATS servers must be signed by", str(&c.natsTLSCA)},
		{"QUEEN_NATS_TLS_CERT", "", "client certificate file for NATS (with QUEEN_NATS_TLS_KEY)", str(&c.natsTLSCert)},
		{"QUEEN_NATS_TLS_KEY", "", "client key file for NATS", str(&c.natsTLSKey)},
		{"QUEEN_NATS_LEAF_URL", "", "leafnode listener of the NATS server of QUEEN_NATS_URL (nats-leaf://host:port, or a comma list): the bridge delivers to JetStream consumers over it, as the server refuses their ack replies from a client (embedded NATS: its own listener, automatically)", str(&c.natsLeafURL)},
		{"QUEEN_NATS_LEAF_USER", "", "user of that leafnode listener", str(&c.natsLeafUser)},
		{"QUEEN_NATS_LEAF_PASSWORD", "", "that user's password", str(&c.natsLeafPassword)},
		{"QUEEN_NATS_LEAF_ACCOUNTS", "", "accounts mode with QUEEN_NATS_LEAF_URL: ACCOUNT=user:password,... one user of that listener bound to each account of QUEEN_NATS_ACCOUNTS (a leaf connection reaches one account's inboxes; instead of QUEEN_NATS_LEAF_USER and _PASSWORD; embedded NATS makes its own)", str(&c.natsLeafAccounts)},
		{"QUEEN_PG_DSN", "", "connect to this PostgreSQL instead of embedding one", str(&c.pgDSN)},
		{"QUEEN_PG_POOL_SIZE", "16", "PostgreSQL connections", num(&c.pgPoolSize)},
		{"QUEEN_PG_STATEMENT_TIMEOUT_MS", "5000", "bundle call timeout, ms: then cancel on the server and spool the items", num(&c.pgStatementTimeoutMS)},
		{"QUEEN_SPOOL_MAX_BYTES", strconv.Itoa(1 << 30), "spool size cap; past it items that cannot be written are answered failed", num64(&c.spoolMaxBytes)},
		{"QUEEN_HTTP_ADDR", "127.0.0.1:6632", "HTTP address: the API, the console and /metrics/prometheus (off disables it)", str(&c.httpAddr)},
		{"QUEEN_DATA_DIR", "./data", "data directory (embedded PostgreSQL under pg/, spool under spool/)", str(&c.dataDir)},
		{"QUEEN_SPOOL_DIR", "", "spool directory (default QUEEN_DATA_DIR/spool)", str(&c.spoolDir)},
		{"QUEEN_FUSION_SHARDS", "8", "fusion shards", num(&c.shards)},
		{"QUEEN_BUNDLE_MAX", "256", "segments (partitions) per fused commit, at most", num(&c.bundleMax)},
		{"QUEEN_BUNDLE_MAX_BYTES", strconv.Itoa(8 << 20), "bytes per fused commit, at most (8 MiB), counted before compression: payloads, ids and 48 bytes a frame; a partition with more pending is written over several commits, in order, and a larger single frame alone", num64(&c.bundleMaxBytes)},
		{"QUEEN_FUSION_HOLD_MS", "15", "backstop tick for held partitions, ms", num(&c.holdMS)},
		{"QUEEN_BUNDLES_IN_FLIGHT_MIN", "1", "bundles in flight at once, lower bound (the limit is 1 + floor(commit flush / a bundle call's working part))", num(&c.inFlightMin)},
		{"QUEEN_BUNDLES_IN_FLIGHT_MAX", "0", "bundles in flight at once, upper bound (0: the pool size)", num(&c.inFlightMax)},
		{"QUEEN_RECENT_HASH_BYTES", strconv.Itoa(512 << 20), "memory for the hashes of frames written inside each queue's dedup window (32 bytes a frame); past it the oldest are forgotten and probed in PostgreSQL", num64(&c.recentHashBytes)},
		{"QUEEN_HOTLIST", "1", "hot-list discovery (0: wake parked reads directly)", func(v string) error {
			b, err := strconv.ParseBool(v)
			c.hotlist = b
			return err
		}},
		{"QUEEN_RETENTION_INTERVAL_MS", "5000", "how often retention removes expired segments, ms (0: never)", num(&c.retentionMS)},
		{"QUEEN_TAIL_CACHE_BYTES", strconv.Itoa(64 << 20), "memory for the segments this bridge committed last, which serve pops of the hot tail without a segment read; 0 or less: off", num64(&c.tailCacheBytes)},
		{"QUEEN_MAX_BODY_BYTES", strconv.Itoa(16 << 20), "largest push body", num64(&c.maxBodyBytes)},
		{"QUEEN_MAX_INFLIGHT_BYTES", strconv.Itoa(256 << 20), "request bodies held in memory at once, HTTP and NATS; past it a request waits 1 s, then 503", num64(&c.maxInflightBytes)},
		{"QUEEN_BODY_TIMEOUT_MS", "30000", "how long an HTTP body may take to arrive, ms; then 408", num(&c.bodyTimeoutMS)},
		{"QUEEN_MAX_PARTITIONS_PER_REQUEST", "1000", "distinct (queue, partition) pairs in one push; beyond it 400", num(&c.maxPartitionsPerRequest)},
		{"QUEEN_TXN_MAX_OPERATIONS", "10000", "operations in one transaction (POST /api/v1/transaction), each push item counted; beyond it 400", num(&c.txnMaxOperations)},
		{"QUEEN_MAX_PARKED_READS", "1024", "reads waiting for messages at once (HTTP waitMs and NATS fetches together); beyond it 503", num(&c.maxParkedReads)},
		{"QUEEN_OWNERSHIP_BUCKETS", "1024", "buckets that partitions fall into for ownership; the same on every bridge of a deployment", num(&c.buckets)},
		{"QUEEN_OWNERSHIP_HEARTBEAT_MS", "500", "how often a bridge tells the others it is alive, ms; one silent for three is gone", num(&c.heartbeatMS)},
		{"QUEEN_FORWARD_TIMEOUT_MS", "2000", "how long a bridge waits for a partition's owner to answer a forward, ms; then it writes the items itself", num(&c.forwardTimeoutMS)},
		{"QUEEN_FORWARD_GATHER_US", "200", "forwards to one owner leave at most once per this many µs: a lone one at once, others gathered into one message (negative: every request's alone)", num(&c.forwardGatherUS)},
		{"QUEEN_DEFAULT_DEDUP_WINDOW_S", "60", "deduplication window of queues created by a push, seconds", num(&c.dedupWindowS)},
		{"QUEEN_DEFAULT_SUBSCRIPTION_MODE", "all", "where a consumer group's first pop of a queue starts when the pop names no subscriptionMode: all (the beginning), or new / new-only (the end)", func(v string) error {
			switch v {
			case "", "all", "new", "new-only":
				c.defaultSubscriptionMode = v
				return nil
			}
			return fmt.Errorf("must be all, new or new-only")
		}},
		{"QUEEN_ENCRYPTION_KEY", "", "AES-256 keys for encrypted queues: 64 hex characters, or id:hex,... (ids 0..255; the highest encrypts, all decrypt)", str(&c.encryptionKeyHex)},
		{"QUEEN_ENCRYPTION_KEY_FILE", "", "file holding QUEEN_ENCRYPTION_KEY's value (entries separated by commas or lines), instead of the variable", str(&c.encryptionKeyFile)},
		{"QUEEN_HTTP_TOKENS", "", "tenant bearer tokens for HTTP: token=tenant-uuid,... (none here and in QUEEN_HTTP_ADMIN_TOKENS: no authentication)", str(&c.httpTokens)},
		{"QUEEN_HTTP_ADMIN_TOKENS", "", "admin bearer tokens for HTTP (may also switch maintenance): token=tenant-uuid,...", str(&c.httpAdminTokens)},
		{"QUEEN_METRICS_ADDR", "", "also serve /metrics (and /metrics/prometheus) here, without tokens (empty: only on the HTTP address)", str(&c.metricsAddr)},
		{"QUEEN_LOG_LEVEL", "info", "debug, info, warn, error", str(&c.logLevel)},
		{"QUEEN_GC_PERCENT", "400", "Go garbage collector target (as GOGC, which wins when set): heap growth in percent of the live heap before a collection", num(&c.gcPercent)},
		{"QUEEN_ADAPTIVE_PROCS", "1", "size GOMAXPROCS to the load: fewer Ps while the bridge uses little CPU, back up to the machine's at once when it needs them (0: keep the runtime's; GOMAXPROCS set: kept)", func(v string) error {
			b, err := strconv.ParseBool(v)
			c.adaptiveProcs = b
			return err
		}},
		{"QUEEN_PPROF_ADDR", "", "serve net/http/pprof on this address (empty: off)", str(&c.pprofAddr)},
		{"QUEEN_LOG_FORMAT", "json", "json, or console for people", str(&c.logFormat)},
		{"QUEEN_SHUTDOWN_TIMEOUT_MS", "30000", "how long SIGINT/SIGTERM waits for in-flight work, ms", func(v string) error {
			n, err := strconv.Atoi(v)
			c.shutdownTimeout = time.Duration(n) * time.Millisecond
			return err
		}},
	}
}

func flagName(env string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(env, "QUEEN_")), "_", "-")
}

// load reads defaults, then the environment, then flags.
func load(args []string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("queen-bridge", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "queen-bridge: fused PostgreSQL writes behind NATS and HTTP.\n\nEvery setting is an environment variable and a flag:\n\n")
		list := c.settings()
		sort.Slice(list, func(i, j int) bool { return list[i].env < list[j].env })
		for _, s := range list {
			was := ""
			if old := oldNames[s.env]; old != "" {
				was = fmt.Sprintf("; its old name %s, -%s, is deprecated", old, flagName(old))
			}
			fmt.Fprintf(fs.Output(), "  -%-26s %-30s %s (default %q%s)\n", flagName(s.env), s.env, s.help, s.def, was)
		}
	}
	for _, s := range c.settings() {
		old := oldNames[s.env]
		v, from := s.def, s.env
		if e, ok := os.LookupEnv(s.env); ok {
			v = e
			if _, both := os.LookupEnv(old); both && old != "" {
				c.deprecated = append(c.deprecated, fmt.Sprintf("%s is deprecated and ignored: %s is set too, and wins", old, s.env))
			}
		} else if e, ok := os.LookupEnv(old); ok && old != "" {
			v, from = e, old
			c.deprecated = append(c.deprecated, fmt.Sprintf("%s is deprecated: use %s", old, s.env))
		}
		if err := s.set(v); err != nil {
			return nil, fmt.Errorf("%s=%q: %w", from, v, err)
		}
		s := s
		fs.Func(flagName(s.env), s.help+" ("+s.env+")", s.set)
		if old != "" {
			fs.Func(flagName(old), "deprecated: -"+flagName(s.env), func(v string) error {
				c.deprecated = append(c.deprecated, fmt.Sprintf("-%s is deprecated: use -%s", flagName(old), flagName(s.env)))
				return s.set(v)
			})
		}
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if c.spoolDir == "" {
		c.spoolDir = filepath.Join(c.dataDir, "spool")
	}
	if c.inFlightMax == 0 {
		c.inFlightMax = c.pgPoolSize
	}
	if c.gcPercent < 25 {
		return nil, fmt.Errorf("QUEEN_GC_PERCENT must be at least 25, got %d", c.gcPercent)
	}
	if _, err := c.streams(); err != nil {
		return nil, err // before anything starts: the exit says what is wrong
	}
	if err := c.checkLeaf(); err != nil {
		return nil, err
	}
	return c, nil
}

// checkLeaf holds the leafnode settings together: they name an external
// server's listener (the embedded server brings its own), a user and
// password only with a URL, and a URL that parses (errors never show its
// password); in the accounts mode, a user per account instead of one.
func (c *config) checkLeaf() error {
	switch {
	case c.natsLeafURL != "" && c.natsURL == "":
		return fmt.Errorf("QUEEN_NATS_LEAF_URL is the leafnode listener of an external NATS (QUEEN_NATS_URL); the embedded server's own is used without it")
	case c.natsLeafURL == "" && (c.natsLeafUser != "" || c.natsLeafPassword != "" || c.natsLeafAccounts != ""):
		return fmt.Errorf("QUEEN_NATS_LEAF_USER, QUEEN_NATS_LEAF_PASSWORD and QUEEN_NATS_LEAF_ACCOUNTS log in to QUEEN_NATS_LEAF_URL, which is not set")
	case c.natsLeafURL != "":
		if _, err := leaf.ParseURL(c.natsLeafURL); err != nil {
			return fmt.Errorf("QUEEN_NATS_LEAF_URL: %w", err)
		}
	}
	switch {
	case c.natsLeafAccounts != "" && c.natsAccounts == "":
		return fmt.Errorf("QUEEN_NATS_LEAF_ACCOUNTS is for the accounts mode (QUEEN_NATS_ACCOUNTS); without it QUEEN_NATS_LEAF_USER and _PASSWORD log in")
	case c.natsAccounts != "" && (c.natsLeafUser != "" || c.natsLeafPassword != ""):
		return fmt.Errorf("in the accounts mode (QUEEN_NATS_ACCOUNTS) a leaf user reaches one account only: give one per account in QUEEN_NATS_LEAF_ACCOUNTS instead of QUEEN_NATS_LEAF_USER and _PASSWORD")
	}
	accounts, err := parsePairs("QUEEN_NATS_ACCOUNTS", c.natsAccounts, "account")
	if err != nil {
		return err
	}
	_, err = c.leafLogins(accounts)
	return err
}

// leafLogins are the external leafnode listener's users of the accounts
// mode, one per account of accounts with its tenant: none outside the
// accounts mode, none without QUEEN_NATS_LEAF_URL. Errors never show a
// password.
func (c *config) leafLogins(accounts map[string]tenancy.TenantID) ([]leaf.Login, error) {
	if len(accounts) == 0 || c.natsLeafURL == "" {
		return nil, nil
	}
	logins, err := leaf.ParseLogins(c.natsLeafAccounts, accounts)
	if err != nil {
		return nil, fmt.Errorf("QUEEN_NATS_LEAF_ACCOUNTS: %w", err)
	}
	return logins, nil
}

// embeddedLeafLogins are the embedded server's leaf users of the accounts
// mode with their accounts' tenants.
func embeddedLeafLogins(ns *embedded.NATS, accounts map[string]tenancy.TenantID) []leaf.Login {
	var out []leaf.Login
	for _, l := range ns.LeafLogins() {
		out = append(out, leaf.Login{Tenant: accounts[l.Account], Account: l.Account, User: l.User, Password: l.Password})
	}
	return out
}

// publishSources are the databases the relay watches: the log's own (dsn)
// unless QUEEN_PUBLISH is off, then each of QUEEN_PUBLISH_DSN's.
func (c *config) publishSources(dsn string) []publish.Source {
	var out []publish.Source
	if c.publish {
		out = append(out, publish.Source{DSN: dsn})
	}
	for _, d := range strings.Split(c.publishDSN, ",") {
		if d = strings.TrimSpace(d); d != "" {
			out = append(out, publish.Source{DSN: d})
		}
	}
	return out
}

// streams are the JetStream stream definitions, checked together and
// against the bridge's own subjects.
func (c *config) streams() ([]jetstream.Stream, error) {
	streams, err := jetstream.ParseStreams(c.jetstream)
	if err == nil {
		err = jetstream.Check(streams, c.natsPrefix)
	}
	if err != nil {
		return nil, fmt.Errorf("QUEEN_JETSTREAM: %w", err)
	}
	return streams, nil
}

// encryptionKeys are the keys from QUEEN_ENCRYPTION_KEY or the file
// QUEEN_ENCRYPTION_KEY_FILE names: one key of 64 hex characters (key id
// 0), or id:hex,... with ids 0..255 (the highest encrypts). Errors name an
// entry by position, never by its text.
func (c *config) encryptionKeys() (map[uint8][]byte, error) {
	list, from := c.encryptionKeyHex, "QUEEN_ENCRYPTION_KEY"
	if c.encryptionKeyFile != "" {
		if list != "" {
			return nil, fmt.Errorf("QUEEN_ENCRYPTION_KEY and QUEEN_ENCRYPTION_KEY_FILE are both set; set one")
		}
		b, err := os.ReadFile(c.encryptionKeyFile)
		if err != nil {
			return nil, fmt.Errorf("QUEEN_ENCRYPTION_KEY_FILE: %w", err)
		}
		list, from = strings.Join(strings.Fields(string(b)), ","), "QUEEN_ENCRYPTION_KEY_FILE "+c.encryptionKeyFile
	}
	keys := map[uint8][]byte{}
	for i, entry := range strings.Split(list, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		id, hexKey := 0, entry
		if idText, k, ok := strings.Cut(entry, ":"); ok {
			n, err := strconv.Atoi(idText)
			if err != nil || n < 0 || n > 255 {
				return nil, fmt.Errorf("%s: entry %d: the key id must be 0..255", from, i+1)
			}
			id, hexKey = n, k
		}
		k, err := hex.DecodeString(hexKey)
		if err != nil || len(k) != 32 {
			return nil, fmt.Errorf("%s: entry %d must be 64 hex characters (32 bytes), or id:that", from, i+1)
		}
		if _, twice := keys[uint8(id)]; twice {
			return nil, fmt.Errorf("%s: key id %d is given twice", from, id)
		}
		keys[uint8(id)] = k
	}
	return keys, nil
}

// natsOptions are the bridge's NATS connection options from the settings:
// who it is (user and password, credentials file or nkey seed) and TLS.
func (c *config) natsOptions() ([]nats.Option, error) {
	var opts []nats.Option
	if c.natsUser != "" || c.natsPassword != "" {
		opts = append(opts, nats.UserInfo(c.natsUser, c.natsPassword))
	}
	if c.natsCreds != "" {
		opts = append(opts, nats.UserCredentials(c.natsCreds))
	}
	if c.natsNkey != "" {
		o, err := nats.NkeyOptionFromSeed(c.natsNkey)
		if err != nil {
			return nil, fmt.Errorf("QUEEN_NATS_NKEY %s: %w", c.natsNkey, err)
		}
		opts = append(opts, o)
	}
	if c.natsTLSCA != "" {
		opts = append(opts, nats.RootCAs(c.natsTLSCA))
	}
	if (c.natsTLSCert == "") != (c.natsTLSKey == "") {
		return nil, fmt.Errorf("QUEEN_NATS_TLS_CERT and QUEEN_NATS_TLS_KEY go together")
	}
	if c.natsTLSCert != "" {
		opts = append(opts, nats.ClientCert(c.natsTLSCert, c.natsTLSKey))
	}
	return opts, nil
}

// parseTokens reads token=tenant-uuid,... from the setting env. An error
// names the entry by position, never by its text: it holds a token.
func parseTokens(env, list string) (map[string]tenancy.TenantID, error) {
	return parsePairs(env, list, "token")
}

// parsePairs reads name=tenant-uuid,...; errors name the entry by position.
func parsePairs(env, list, what string) (map[string]tenancy.TenantID, error) {
	out := map[string]tenancy.TenantID{}
	for i, pair := range strings.Split(list, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		tok, ten, ok := strings.Cut(pair, "=")
		id, err := tenancy.Parse(strings.TrimSpace(ten))
		if !ok || err != nil || strings.TrimSpace(tok) == "" {
			return nil, fmt.Errorf("%s: entry %d is not %s=tenant-uuid", env, i+1, what)
		}
		out[strings.TrimSpace(tok)] = id
	}
	return out, nil
}
