package push

import (
	"errors"
	"fmt"
	"time"

	"github.com/queenbridge/queenbridge/durability"
	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/ownership"
	"github.com/queenbridge/queenbridge/queues"
	"github.com/queenbridge/queenbridge/readside"
)

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
	Fusion *fusion.Fusion
	// Router names each partition's owner and forwards groups to it.
	// Required.
	Router *ownership.Router
	// Queues says how each queue's payloads are stored and seals them.
	// Required.
	Queues *queues.Settings
	// Keeper knows maintenance mode and spools what PostgreSQL could not
	// take. Required.
	Keeper *durability.Keeper
	// Reads hears which partitions a push wrote (discovery). Required.
	Reads *readside.Reads
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
