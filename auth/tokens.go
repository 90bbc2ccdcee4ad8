package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"

	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// Role is what a token may do.
type Role uint8

const (
	// RoleTenant pushes, reads and configures its own tenant's queues.
	RoleTenant Role = iota + 1
	// RoleAdmin may do what a tenant token may, and use the admin routes
	// (maintenance, queue and consumer-group deletes, stats refresh).
	RoleAdmin
)

// Action is something a request asks to do.
type Action uint8

const (
	ActionPush Action = iota + 1
	ActionRead
	ActionConfigure
	ActionMetrics
	// ActionAdmin: Queen's ADMIN routes (queue and consumer-group deletes,
	// maintenance, stats refresh).
	ActionAdmin
)

// Principal is who a request acts as.
type Principal struct {
	Tenant tenancy.TenantID
	Role   Role
}

// May reports whether p may do a.
func (p Principal) May(a Action) bool {
	switch a {
	case ActionAdmin:
		return p.Role == RoleAdmin
	default:
		return p.Role == RoleTenant || p.Role == RoleAdmin
	}
}

// Tokens are the configured bearer tokens, kept as SHA-256 digests.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	digest [sha256.Size]byte
	p      Principal
}

// ErrTokenTwice: one token configured with two roles or two tenants.
var ErrTokenTwice = errors.New("auth: a token is configured more than once (as a tenant token and an admin token, or for two tenants)")

// NewTokens builds the token table from tenant tokens and admin tokens
// (token -> tenant). Empty tokens are refused; the error never names a
// token.
func NewTokens(tenant, admin map[string]tenancy.TenantID) (*Tokens, error) {
	t := &Tokens{}
	seen := map[[sha256.Size]byte]bool{}
	add := func(m map[string]tenancy.TenantID, r Role) error {
		for tok, ten := range m {
			if tok == "" {
				return errors.New("auth: an empty token is configured")
			}
			d := sha256.Sum256([]byte(tok))
			if seen[d] {
				return ErrTokenTwice
			}
			seen[d] = true
			t.entries = append(t.entries, tokenEntry{digest: d, p: Principal{Tenant: ten, Role: r}})
		}
		return nil
	}
	if err := add(tenant, RoleTenant); err != nil {
		return nil, err
	}
	if err := add(admin, RoleAdmin); err != nil {
		return nil, err
	}
	return t, nil
}

// Enabled reports whether any token is configured: without one, HTTP is
// open (every request acts as an admin of the default tenant).
func (t *Tokens) Enabled() bool { return t != nil && len(t.entries) > 0 }

// Lookup finds the principal of a presented token. The comparison takes
// the same time whichever entry matches, and whether one does: every entry
// is compared, by digest, in constant time.
func (t *Tokens) Lookup(token string) (Principal, bool) {
	d := sha256.Sum256([]byte(token))
	var found Principal
	ok := 0
	for i := range t.entries {
		m := subtle.ConstantTimeCompare(d[:], t.entries[i].digest[:])
		if m == 1 {
			found = t.entries[i].p
		}
		ok |= m
	}
	return found, ok == 1
}
