package procs

import (
	"context"
	"errors"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The thresholds, in cores of CPU the process used: a tick with more than
// raiseAt per P raises at once (doubling); a window of calmTicks ticks
// whose mean load fewer Ps would carry at lowerAt per P lowers to them.
// Lowering on a window's mean, not on every tick, lets a light load with
// noisy ticks (a lone client) come down; the gap between the thresholds,
// and that the same work costs more CPU with more Ps (the spinning), keep a
// load from flapping between sizes.
const (
	raiseAt   = 0.6
	lowerAt   = 0.55
	calmTicks = 20
)

// Config is a Controller's wiring; the zero value is the process itself.
type Config struct {
	// Max is the most Ps. Default: runtime.GOMAXPROCS(0) when New runs.
	Max int
	// Tick is how often the load is read. Default 250ms.
	Tick time.Duration
	// CPU is the CPU time the process has used so far. Default: getrusage's
	// user and system time of the process.
	CPU func() time.Duration
	// Set applies a new number of Ps. Default: runtime.GOMAXPROCS.
	Set func(int)
}

// Controller adapts the number of Ps between 1 and Config.Max.
type Controller struct {
	cfg   Config
	procs atomic.Int64 // the number applied last; written by the loop (and Stop, after it)
	// The window's load so far: the sum and the ticks since the last
	// change or the last full window. The loop's alone.
	sum   float64
	ticks int

	started  bool
	stopOnce sync.Once
	quit     chan struct{}
	done     chan struct{}
}

// New validates cfg and applies its defaults.
func New(cfg Config) (*Controller, error) {
	if cfg.Max == 0 {
		cfg.Max = runtime.GOMAXPROCS(0)
	}
	if cfg.Max < 1 {
		return nil, errors.New("procs: Config.Max must be at least 1")
	}
	if cfg.Tick == 0 {
		cfg.Tick = 250 * time.Millisecond
	}
	if cfg.Tick < 0 {
		return nil, errors.New("procs: Config.Tick must be positive")
	}
	if cfg.CPU == nil {
		cfg.CPU = processCPU
	}
	if cfg.Set == nil {
		cfg.Set = func(n int) { runtime.GOMAXPROCS(n) }
	}
	c := &Controller{cfg: cfg, quit: make(chan struct{}), done: make(chan struct{})}
	c.procs.Store(int64(cfg.Max))
	return c, nil
}

// Procs is the number of Ps applied last.
func (c *Controller) Procs() int { return int(c.procs.Load()) }

// Start runs the loop: the process starts with Max Ps and keeps them
// until a window of calmTicks ticks asks for fewer.
func (c *Controller) Start(context.Context) error {
	if c.started {
		return errors.New("procs: started twice")
	}
	c.started = true
	go c.run()
	return nil
}

// Stop ends the loop and gives the process its Max Ps back. It may be
// called again.
func (c *Controller) Stop(ctx context.Context) error {
	if !c.started {
		return nil
	}
	c.stopOnce.Do(func() { close(c.quit) })
	select {
	case <-c.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if c.Procs() != c.cfg.Max {
		c.cfg.Set(c.cfg.Max)
		c.procs.Store(int64(c.cfg.Max))
	}
	return nil
}

func (c *Controller) run() {
	defer close(c.done)
	t := time.NewTicker(c.cfg.Tick)
	defer t.Stop()
	lastCPU, lastAt := c.cfg.CPU(), time.Now()
	for {
		select {
		case <-c.quit:
			return
		case now := <-t.C:
			cpu := c.cfg.CPU()
			if wall := now.Sub(lastAt); wall > 0 {
				c.step(float64(cpu-lastCPU) / float64(wall))
			}
			lastCPU, lastAt = cpu, now
		}
	}
}

// step takes one tick's load, in cores, and applies the number of Ps it
// asks for.
func (c *Controller) step(load float64) {
	p := c.Procs()
	if load > raiseAt*float64(p) && p < c.cfg.Max {
		c.apply(min(c.cfg.Max, 2*p))
		return
	}
	c.sum += load
	if c.ticks++; c.ticks < calmTicks {
		return
	}
	mean := c.sum / float64(c.ticks)
	c.sum, c.ticks = 0, 0
	if want := max(1, int(math.Ceil(mean/lowerAt))); want < p {
		c.apply(want)
	}
}

// apply sets n Ps and starts a new window.
func (c *Controller) apply(n int) {
	c.cfg.Set(n)
	c.procs.Store(int64(n))
	c.sum, c.ticks = 0, 0
}

// processCPU is the user and system time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
