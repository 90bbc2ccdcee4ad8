package consume

import (
	"context"
	"time"
)

// Extend sets a live lease's expiry to at least now + seconds on every
// partition it holds; ok is false when the lease is unknown or expired.
func (c *Consumer) Extend(ctx context.Context, tenant, lease [16]byte, seconds int) (expires time.Time, ok bool, err error) {
	return c.cfg.DB.ExtendLease(ctx, tenant, lease, seconds)
}
