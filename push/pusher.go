package push

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queenbridge/queenbridge/durability"
	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/ownership"
	"github.com/queenbridge/queenbridge/readside"
)

// What the push call needs of the rooms it uses, each as narrow as the
// call's use of it, so that the call can be run beside fakes.

// Submitter commits a group's frames and answers their verdicts;
// *fusion.Fusion satisfies it.
type Submitter interface {
	Submit(ctx context.Context, s fusion.Submission) error
}

// Owners names each partition's owning bridge ("" for this one) and
// forwards groups to it; *ownership.Router satisfies it.
type Owners interface {
	Owner(tenant tenancy.TenantID, queue, partition string) string
	ForwardAsync(owner string, tenant tenancy.TenantID, groups []ownership.Group, done func([]ownership.Answer, error))
}

// Sealer says how a queue's payloads are stored and seals them;
// *queues.Settings satisfies it.
type Sealer interface {
	// EncryptionFor answers nil (seal), queues.ErrPlain (store as sent),
	// or why the queue's items must fail.
	EncryptionFor(ctx context.Context, tenant tenancy.TenantID, queue string) error
	Seal(tenant tenancy.TenantID, queue, partition string, plain []byte) ([]byte, uint8)
}

// Spooler knows maintenance mode and spools what PostgreSQL could not
// take; *durability.Keeper satisfies it.
type Spooler interface {
	Maintenance() bool
	CanSpool() bool
	Spool(ctx context.Context, tenant tenancy.TenantID, failed []durability.Failed) error
}

// Announcer hears which partitions a push wrote; *readside.Reads
// satisfies it.
type Announcer interface {
	AnnouncePushed(keys []readside.Key)
}

// Observer hears of push requests for the metrics; *metrics.Metrics
// satisfies it.
type Observer interface {
	Request(transport string)
	Items(status string, n int)
	Latency(transport string, d time.Duration)
}

// Config wires the push call to the rooms it uses.
type Config struct {
	// Fusion commits the groups this bridge writes. Required.
	Fusion Submitter
	// Router names each partition's owner and forwards groups to it.
	// Required.
	Router Owners
	// Queues says how each queue's payloads are stored and seals them.
	// Required.
	Queues Sealer
	// Keeper knows maintenance mode and spools what PostgreSQL could not
	// take. Required.
	Keeper Spooler
	// Reads hears which partitions a push wrote (discovery). Required.
	Reads Announcer
	// Observer counts requests, items by status and latency. Default: none.
	Observer Observer
	// MaxPartitionsPerRequest caps the distinct (queue, partition) pairs of
	// one push; beyond it the request is a 400. Default 1000.
	MaxPartitionsPerRequest int
	// Stopping reports that the bridge is shutting down: a push that
	// reaches the call then is refused with 503. Default: never.
	Stopping func() bool
}

// Pusher runs push calls. It holds no state across calls: each call's
// state is its own (pushCall), settled by the fusion goroutines that
// answer its groups.
type Pusher struct {
	cfg Config
}

// New validates cfg and applies its defaults.
func New(cfg Config) (*Pusher, error) {
	if cfg.Fusion == nil || cfg.Router == nil || cfg.Queues == nil || cfg.Keeper == nil || cfg.Reads == nil {
		return nil, errors.New("push: Config.Fusion, Router, Queues, Keeper and Reads are required")
	}
	if cfg.MaxPartitionsPerRequest == 0 {
		cfg.MaxPartitionsPerRequest = 1000
	}
	if cfg.MaxPartitionsPerRequest < 0 {
		return nil, fmt.Errorf("push: MaxPartitionsPerRequest must be positive, got %d", cfg.MaxPartitionsPerRequest)
	}
	if cfg.Observer == nil {
		cfg.Observer = noObserver{}
	}
	if cfg.Stopping == nil {
		cfg.Stopping = func() bool { return false }
	}
	return &Pusher{cfg: cfg}, nil
}

type noObserver struct{}

func (noObserver) Request(string)                {}
func (noObserver) Items(string, int)             {}
func (noObserver) Latency(string, time.Duration) {}
