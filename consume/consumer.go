package consume

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/queenbridge/queenbridge/cursors"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/readside"
	"github.com/queenbridge/queenbridge/segment"
)

// Store is what the consumer API asks of the database; *pgwire.DB
// satisfies it. Tests of grouping and claim rounds put a small fake here.
type Store interface {
	Pop(ctx context.Context, req pgwire.PopRequest) (pgwire.PopResult, error)
	Ack(ctx context.Context, tenant tenancy.TenantID, pid int64, group string, lease *[16]byte, items []pgwire.AckItem) (pgwire.AckResult, error)
	AckWhole(ctx context.Context, acks []pgwire.WholeAck) ([]pgwire.WholeAckResult, error)
	PopTail(ctx context.Context, claims []pgwire.TailClaim) ([]pgwire.PopResult, error)
	ExtendLease(ctx context.Context, tenant tenancy.TenantID, lease [16]byte, seconds int) (time.Time, bool, error)
	UnclaimAutoAck(ctx context.Context, pid int64, group string, cursor, to int64) (bool, error)
	DeadLetters(ctx context.Context, tenant tenancy.TenantID, queue, group string, limit, offset int) ([]pgwire.DeadLetter, int64, error)
	SeekGroup(ctx context.Context, req pgwire.SeekRequest) ([]pgwire.GroupPartition, error)
	DeleteGroup(ctx context.Context, tenant tenancy.TenantID, group, queue string, subscriptions bool) ([]pgwire.GroupPartition, error)
	Transaction(ctx context.Context, req pgwire.TxnRequest) (pgwire.TxnResult, error)
	RequeueCandidates(ctx context.Context, sel pgwire.RequeueSelect) ([]pgwire.DeadLetter, bool, bool, error)
	Requeue(ctx context.Context, req pgwire.RequeueRequest) ([]segment.Result, error)
}

// Marks is what an any-partition pop asks of the consumer state: its
// candidate partitions, a reservation of one while it is claimed, what the
// claim found, and a lease's release; *cursors.Marks satisfies it.
type Marks interface {
	Candidates(ctx context.Context, tenant tenancy.TenantID, queue, group string) ([]cursors.Candidate, error)
	Reserve(tenant tenancy.TenantID, queue, group string, c cursors.Candidate) bool
	Outcome(tenant tenancy.TenantID, queue, group string, c cursors.Candidate, res pgwire.PopResult)
	Released(tenant tenancy.TenantID, queue, partition, group string, again bool)
}

// Payloads turns a stored payload into what its producer sent (decrypting
// those of encrypted queues); *queues.Settings satisfies it.
type Payloads interface {
	Plain(tenant tenancy.TenantID, queue, partition string, flags uint8, stored []byte) ([]byte, error)
	// Sealed reports whether a queue's payloads may be sealed, and refuses
	// (an error naming the queue and the key id) when this bridge lacks
	// the key that seals them now: a pop then claims nothing.
	Sealed(ctx context.Context, tenant tenancy.TenantID, queue string) (bool, error)
}

// Observer hears of pops and acks for the metrics; *metrics.Metrics
// satisfies it.
type Observer interface {
	Popped(n int)
	Acked(status string, ok, dead bool)
	// Transaction counts one transaction request by outcome (TxnCommitted,
	// TxnRolledBack, TxnRefused).
	Transaction(outcome string)
}

// Config wires the consumer API.
type Config struct {
	// DB runs the claims, acks and lease calls. Required.
	DB Store
	// Reads parks pops that found nothing and announces partitions whose
	// lease ended. Required.
	Reads *readside.Reads
	// Marks steers any-partition pops and hears of releases; the read side
	// must hand it its announcements (readside.Config.Listener). Required.
	Marks Marks
	// Payloads decrypts payloads of encrypted queues, and says before a pop
	// claims whether the queue's payloads may be sealed and whether this
	// bridge holds their key. Required.
	Payloads Payloads
	// Maintenance reports maintenance mode, in which pops deliver nothing.
	// Default: never on.
	Maintenance func() bool
	// PopMaintenance reports pop maintenance (Queen's
	// /api/v1/system/maintenance/pop), in which pops deliver nothing
	// either. Default: never on.
	PopMaintenance func() bool
	// Observer counts pops and acks. Default: none.
	Observer Observer
	// Tail serves pops of the segments this bridge just committed from
	// memory (fed by the fusion's commit hook). Default: none.
	Tail *cursors.Tail
	// DefaultSubscriptionMode is where a named group's first pop of a queue
	// starts when the pop names no subscriptionMode
	// (QUEEN_DEFAULT_SUBSCRIPTION_MODE): "all" (from the beginning), or
	// "new" and its alias "new-only" (at the end). Default "all".
	DefaultSubscriptionMode string
	// Pushes prepares the pushes of transactions (ids, sealing, grouping).
	// Default: none, and a transaction with pushes is refused (503).
	Pushes Preparer
	// Stopping reports that the bridge is shutting down: a transaction
	// that arrives then is refused (503). Default: never.
	Stopping func() bool
	// RequeueMax bounds the dead letters one requeue sends again (POST
	// /api/v1/dlq/requeue without a message named). Default 1000.
	RequeueMax int
	// Streams keeps streaming queries' registrations and state and runs
	// their cycles (streams.go). Default: DB, when it is one.
	Streams StreamStore
	// GeneralAcksOnly sends every acknowledgement through consumer_ack_v1,
	// whole batches too (the differential tests compare the two paths).
	GeneralAcksOnly bool
}

// Consumer owns the consumer API's calls and counters.
type Consumer struct {
	cfg        Config
	acks       ackFuser
	tailClaims claimFuser
	pending    pendingPops // pops a cancel may reach (cancel.go)
	turns      stateTurns  // streams state reads taking turns (streamturns.go)

	pops          atomic.Uint64 // rounds of claims made by pops
	claims        atomic.Uint64 // partition claims tried
	leaseExpiries atomic.Uint64 // claims that took over an expired lease
	delivered     atomic.Uint64 // messages delivered by pops
	wholeAcks     atomic.Uint64 // whole-batch acknowledgements applied by one cursor move
	orderings     atomic.Uint64 // deepestFirst's orderings, for its recheck of known-empty partitions
	tooLarge      atomic.Uint64 // pops refused: a message larger than the transport's answer
	released      atomic.Uint64 // partition deliveries handed back unanswered (too large, requester gone)
	cancels       atomic.Uint64 // cancels that reached their pop
}

// New validates cfg and applies its defaults.
func New(cfg Config) (*Consumer, error) {
	if cfg.DB == nil || cfg.Reads == nil || cfg.Marks == nil || cfg.Payloads == nil {
		return nil, errors.New("consume: Config.DB, Config.Reads, Config.Marks and Config.Payloads are required")
	}
	if cfg.Maintenance == nil {
		cfg.Maintenance = func() bool { return false }
	}
	if cfg.PopMaintenance == nil {
		cfg.PopMaintenance = func() bool { return false }
	}
	if cfg.Observer == nil {
		cfg.Observer = noObserver{}
	}
	switch cfg.DefaultSubscriptionMode {
	case "", "all":
		cfg.DefaultSubscriptionMode = "all"
	case "new", "new-only":
		cfg.DefaultSubscriptionMode = "new"
	default:
		// An operator's setting, unlike a pop's parameter: a typo here would
		// silently replay whole queues to every new group.
		return nil, fmt.Errorf("consume: DefaultSubscriptionMode must be all, new or new-only, got %q", cfg.DefaultSubscriptionMode)
	}
	if cfg.Stopping == nil {
		cfg.Stopping = func() bool { return false }
	}
	if cfg.RequeueMax == 0 {
		cfg.RequeueMax = 1000
	}
	if cfg.RequeueMax < 1 {
		return nil, fmt.Errorf("consume: RequeueMax must be positive, got %d", cfg.RequeueMax)
	}
	c := &Consumer{cfg: cfg, pending: pendingPops{byKey: map[pendingKey]*pendingPop{}}}
	c.acks = ackFuser{run: cfg.DB.AckWhole, slots: maxAckStatements}
	c.tailClaims = claimFuser{run: cfg.DB.PopTail, slots: maxClaimStatements}
	return c, nil
}

// Stats are counters for the metrics.
type Stats struct {
	Pops          uint64 // rounds of claims made by pops (a parked pop makes one per wake)
	Claims        uint64 // partition claims tried by pops
	LeaseExpiries uint64 // claims that took over an expired lease
	Delivered     uint64 // messages delivered by pops
	WholeAcks     uint64 // whole-batch acknowledgements applied by one cursor move
	// TooLarge counts pops refused because a message they claimed is
	// larger than the transport's answer carries (NATS's max payload).
	TooLarge uint64
	// Released counts partition deliveries handed back without reaching a
	// consumer: too large to answer, or the requester gone or cancelled.
	Released uint64
	// Cancels counts pop cancels that reached their pop.
	Cancels uint64
	Tail    cursors.TailStats
}

// Stats returns a snapshot.
func (c *Consumer) Stats() Stats {
	return Stats{Pops: c.pops.Load(), Claims: c.claims.Load(), LeaseExpiries: c.leaseExpiries.Load(), Delivered: c.delivered.Load(), WholeAcks: c.wholeAcks.Load(),
		TooLarge: c.tooLarge.Load(), Released: c.released.Load(), Cancels: c.cancels.Load(), Tail: c.cfg.Tail.Stats()}
}

type noObserver struct{}

func (noObserver) Popped(int)               {}
func (noObserver) Acked(string, bool, bool) {}
func (noObserver) Transaction(string)       {}
