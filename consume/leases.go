package consume

import (
	"context"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// Extend sets a live lease's expiry to at least now + seconds on every
// partition it holds; ok is false when the lease is unknown or expired.
func (c *Consumer) Extend(ctx context.Context, tenant tenancy.TenantID, lease [16]byte, seconds int) (expires time.Time, ok bool, err error) {
	return c.cfg.DB.ExtendLease(ctx, tenant, lease, seconds)
}
