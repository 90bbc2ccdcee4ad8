package bridge

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/internal/leaf"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jetstream"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/publish"
	"github.com/queenbridge/queenbridge/spool"
	"github.com/rs/zerolog"
)

// Config wires the front door to the parts behind it. The settings of the
// rooms (queue settings, the read side, durability) are passed on to them,
// which apply their defaults.
type Config struct {
	// DB is the database. Required.
	DB *pgwire.DB
	// Fusion commits pushes. Required, started by the caller.
	Fusion *fusion.Fusion
	// NATS is the connection the micro service runs on; nil: no NATS front
	// door. Default nil.
	NATS *nats.Conn
	// NATSAccounts maps NATS accounts to tenants (QUEEN_NATS_ACCOUNTS): the
	// accounts mode, in which a NATS request acts for the tenant of the
	// account it came from. Empty: the single-account mode, which trusts
	// every NATS client. Default empty.
	NATSAccounts map[string]tenancy.TenantID
	// Prefix of every subject (QUEEN_NATS_PREFIX). Default "queen".
	Prefix string
	// JetStream are the streams whose JetStream publishes the bridge takes
	// (QUEEN_JETSTREAM); they need NATS. Default none.
	JetStream []jetstream.Stream
	// LeafURL is the leafnode listener of the NATS server
	// (QUEEN_NATS_LEAF_URL, or the embedded server's own), for messages a
	// client may not send (JetStream consumers' deliveries, whose ack
	// replies the server refuses from a client); LeafUser and LeafPassword
	// log in to it. Default "": none.
	LeafURL, LeafUser, LeafPassword string
	// LeafLogins are, in the accounts mode, the users of that listener
	// bound to the tenant accounts, one for each account of NATSAccounts
	// (QUEEN_NATS_LEAF_ACCOUNTS, or the embedded server's own): a leaf
	// connection reaches only the inboxes of the account its user is
	// bound to, so each tenant's deliveries need their own. LeafUser and
	// LeafPassword are then unused. Default none.
	LeafLogins []leaf.Login
	// Publish are the databases whose queen.publish messages the bridge
	// relays (QUEEN_PUBLISH, QUEEN_PUBLISH_DSN; docs/publish.md). Default
	// none.
	Publish []publish.Source
	// PublishMaxLagBytes and PublishMaxLag bound a relayed slot's lag;
	// beyond either it is reported behind on /health and in the console
	// (QUEEN_PUBLISH_MAX_LAG_BYTES, QUEEN_PUBLISH_MAX_LAG_MS). Defaults
	// 1 GiB, 60s.
	PublishMaxLagBytes int64
	PublishMaxLag      time.Duration
	// PublishRetry is how often a bridge that does not hold a slot tries
	// to take it. Default 1s.
	PublishRetry time.Duration
	// HTTPAddr is the HTTP API's listen address; "" or "off": none
	// (QUEEN_HTTP_ADDR). Default "".
	HTTPAddr string
	// MaxBodyBytes caps a push body (QUEEN_MAX_BODY_BYTES). Default 16 MiB.
	MaxBodyBytes int64
	// MaxPartitionsPerRequest caps the distinct (queue, partition) pairs of
	// one push (QUEEN_MAX_PARTITIONS_PER_REQUEST); beyond it the request is
	// a 400 that says how many it named. Default 1000.
	MaxPartitionsPerRequest int
	// MaxTxnOperations caps the operations of one transaction, push items
	// counted one each (QUEEN_TXN_MAX_OPERATIONS); beyond it the request is
	// a 400. Default 10000.
	MaxTxnOperations int
	// MaxInflightBytes bounds the request bodies held in memory at once,
	// over HTTP and NATS (QUEEN_MAX_INFLIGHT_BYTES). A request that finds it
	// full waits up to BudgetWait, then gets 503. Default 256 MiB.
	MaxInflightBytes int64
	// BudgetWait is how long a request waits for MaxInflightBytes to have
	// room. Default 1s.
	BudgetWait time.Duration
	// BodyTimeout bounds the time an HTTP body takes to arrive
	// (QUEEN_BODY_TIMEOUT_MS); past it the request gets 408. Default 30s.
	BodyTimeout time.Duration
	// EncryptionKeys are AES-256 keys by id (QUEEN_ENCRYPTION_KEY, as
	// id:hex,...): the highest id encrypts, every one decrypts. With no key
	// at all, encrypted queues refuse pushes. Default none.
	EncryptionKeys map[uint8][]byte
	// Tokens maps HTTP bearer tokens to tenants (QUEEN_HTTP_TOKENS): they
	// push, read and configure their tenant's queues. With no tokens and no
	// admin tokens, HTTP needs no authentication and acts for the default
	// tenant. Default empty.
	Tokens map[string]tenancy.TenantID
	// AdminTokens are tokens that may also switch maintenance mode
	// (QUEEN_HTTP_ADMIN_TOKENS), each acting for its tenant. Default empty.
	AdminTokens map[string]tenancy.TenantID
	// MetricsAddr, when set, serves /metrics (and /metrics/prometheus) on
	// a listener of its own without tokens, for a scraper on a private address
	// (QUEEN_METRICS_ADDR). The main listener serves it too, under the token
	// rules. Default "".
	MetricsAddr string
	// QueueCacheTTL is how long a queue's settings are trusted across
	// requests. Default 2s.
	QueueCacheTTL time.Duration
	// Workers bound the goroutines that decode and submit NATS requests
	// (waiting for verdicts holds none). Default 32.
	Workers int
	// Spool takes what PostgreSQL could not (failed bundles, maintenance
	// mode); nil: such items are answered failed. Default nil.
	Spool *spool.Spool
	// MaintenancePoll is how often the maintenance flag is re-read from the
	// database (a backstop for the NATS broadcast). Default 5s.
	MaintenancePoll time.Duration
	// DrainInterval is how often the drain looks at the spool when nothing
	// wakes it. Default 1s.
	DrainInterval time.Duration
	// DisableHotlist makes announcements wake parked reads directly instead
	// of through the 5 ms hot-list tick (QUEEN_HOTLIST=0). Default false.
	DisableHotlist bool
	// RetentionInterval is how often retention runs; negative disables it.
	// Default 5s.
	RetentionInterval time.Duration
	// MaxParked bounds requests parked at once: fetches with a waitMs and
	// pops with wait=true, over NATS and HTTP together
	// (QUEEN_MAX_PARKED_READS); beyond it a request gets 503. Default 1024.
	MaxParked int
	// Buckets is the number of ownership buckets over (tenant, queue,
	// partition); every bridge of a deployment must use the same
	// (QUEEN_OWNERSHIP_BUCKETS). Default 1024.
	Buckets int
	// Heartbeat is how often a bridge tells the others it is alive; one not
	// heard from for three is gone (QUEEN_OWNERSHIP_HEARTBEAT_MS).
	// Default 500ms.
	Heartbeat time.Duration
	// ForwardTimeout bounds the wait for a partition owner's answer; past it
	// the receiving bridge writes the groups itself
	// (QUEEN_FORWARD_TIMEOUT_MS). Default 2s.
	ForwardTimeout time.Duration
	// ForwardGather: forwards to one owner leave at most once per
	// ForwardGather, a lone one at once, concurrent requests' groups
	// together in one message (QUEEN_FORWARD_GATHER_US). Negative: each
	// request's alone. Default 200µs.
	ForwardGather time.Duration
	// DefaultSubscriptionMode is where a consumer group's first pop of a
	// queue starts when it names no subscriptionMode: "all", or "new" (and
	// its alias "new-only") (QUEEN_DEFAULT_SUBSCRIPTION_MODE). Default "all".
	DefaultSubscriptionMode string
	// TailCacheBytes bounds the hot tail: segments this bridge committed,
	// kept to serve pops without a segment read (QUEEN_TAIL_CACHE_BYTES).
	// Negative: off. Default 64 MiB.
	TailCacheBytes int64
	// Registry receives the Prometheus collectors. Default: a new registry.
	Registry *prometheus.Registry
	// Logger for the bridge and http targets. Default: disabled.
	Logger zerolog.Logger
}

func (c *Config) applyDefaults() error {
	if c.DB == nil || c.Fusion == nil {
		return errors.New("bridge: Config.DB and Config.Fusion are required")
	}
	setDefault(&c.Prefix, "queen")
	if c.HTTPAddr == "off" {
		c.HTTPAddr = ""
	}
	setDefault(&c.MaxBodyBytes, 16<<20)
	setDefault(&c.MaxInflightBytes, 256<<20)
	setDefault(&c.BudgetWait, time.Second)
	setDefault(&c.BodyTimeout, 30*time.Second)
	setDefault(&c.MaxTxnOperations, 10000)
	if c.MaxBodyBytes < 0 || c.MaxInflightBytes < 0 || c.BudgetWait < 0 || c.BodyTimeout < 0 || c.MaxTxnOperations < 0 {
		return fmt.Errorf("bridge: MaxBodyBytes (%d), MaxInflightBytes (%d), BudgetWait (%s), BodyTimeout (%s) and MaxTxnOperations (%d) must be positive",
			c.MaxBodyBytes, c.MaxInflightBytes, c.BudgetWait, c.BodyTimeout, c.MaxTxnOperations)
	}
	if err := c.checkLeafLogins(); err != nil {
		return err
	}
	setDefault(&c.TailCacheBytes, 64<<20)
	setDefault(&c.MaxParked, 1024)
	setDefault(&c.Workers, 32)
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
	return nil
}

// setDefault sets *v to d when it is the zero value.
func setDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}
