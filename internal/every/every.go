package every

import (
	"sync/atomic"
	"time"
)

// Limit lets one event through per period.
type Limit struct {
	period time.Duration
	next   atomic.Int64
}

// New returns a Limit of one event per period.
func New(period time.Duration) *Limit { return &Limit{period: period} }

// Allow reports whether an event may go now.
func (l *Limit) Allow() bool {
	now := time.Now().UnixNano()
	next := l.next.Load()
	return now >= next && l.next.CompareAndSwap(next, now+int64(l.period))
}
