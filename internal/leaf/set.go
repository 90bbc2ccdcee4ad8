package leaf

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// Login is one user of the hub's leafnode listener and the tenant whose
// consumers it delivers to. A leaf connection binds the one account its
// user is bound to on the hub (nats-server's leafnodes authorization,
// `account:` of each user), so it sees only that account's subscriptions
// and reaches only its inboxes: in the accounts mode every tenant account
// needs a login of its own.
type Login struct {
	// Tenant is whose deliveries go over this login's connection.
	Tenant tenancy.TenantID
	// Account is the NATS account the user is bound to, for errors and
	// logs ("" : the hub's default account).
	Account string
	// User and Password (or Token) log in; "" when the listener has no
	// authorization.
	User, Password, Token string
}

// Set is one leaf connection per tenant, to one hub. Its map is written
// once by DialSet and only read afterwards, so it needs no lock.
type Set struct {
	conns   map[tenancy.TenantID]*Conn
	account map[tenancy.TenantID]string
}

// DialSet dials one Conn per login with base's URL, TLS and logger (the
// login's user, password and token replace base's; the name gains the
// account). Two logins for one tenant, or one user twice, are an error. A
// login the hub refuses fails the whole set, naming its account (never
// its password), and closes what was opened.
func DialSet(ctx context.Context, base Config, logins []Login) (*Set, error) {
	s := &Set{conns: map[tenancy.TenantID]*Conn{}, account: map[tenancy.TenantID]string{}}
	users := map[string]string{}
	for _, l := range logins {
		if other, twice := s.account[l.Tenant]; twice {
			return nil, errors.Join(fmt.Errorf("leaf: tenant %s has two logins (accounts %q and %q)", l.Tenant, other, l.Account), s.Close())
		}
		if other, twice := users[l.User]; twice && l.User != "" {
			return nil, errors.Join(fmt.Errorf("leaf: accounts %q and %q log in as the same user; the hub binds a user to one account", other, l.Account), s.Close())
		}
		users[l.User] = l.Account
		cfg := base
		cfg.User, cfg.Password, cfg.Token = l.User, l.Password, l.Token
		if cfg.Name == "" {
			cfg.Name = "queen-bridge"
		}
		if l.Account != "" {
			cfg.Name += "/" + l.Account
		}
		cfg.Logger = base.Logger.With().Str("account", l.Account).Logger()
		c, err := Dial(ctx, cfg)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("leaf: account %q: %w", l.Account, err), s.Close())
		}
		s.conns[l.Tenant], s.account[l.Tenant] = c, l.Account
	}
	return s, nil
}

// For is the connection that delivers to tenant's inboxes; false when the
// set has none for it (its deliveries have nowhere to go).
func (s *Set) For(tenant tenancy.TenantID) (*Conn, bool) {
	c, ok := s.conns[tenant]
	return c, ok
}

// Publish sends over tenant's connection (Conn.Publish);
// ErrNoConnection when the set has none for tenant.
func (s *Set) Publish(tenant tenancy.TenantID, subject, reply string, header, body []byte) error {
	c, ok := s.conns[tenant]
	if !ok {
		return fmt.Errorf("%w (tenant %s)", ErrNoConnection, tenant)
	}
	return c.Publish(subject, reply, header, body)
}

// Hold holds tenant's connection's writes until Release (Conn.Hold);
// nothing when the set has no connection for tenant.
func (s *Set) Hold(tenant tenancy.TenantID) {
	if c, ok := s.conns[tenant]; ok {
		c.Hold()
	}
}

// Release ends a Hold of tenant's connection.
func (s *Set) Release(tenant tenancy.TenantID) {
	if c, ok := s.conns[tenant]; ok {
		c.Release()
	}
}

// Interested reports whether some subscription in tenant's account
// matches subject; false when the set has no connection for tenant.
func (s *Set) Interested(tenant tenancy.TenantID, subject string) bool {
	c, ok := s.conns[tenant]
	return ok && c.Interested(subject)
}

// Len is the number of connections.
func (s *Set) Len() int { return len(s.conns) }

// OnInterestLost sets fn on every connection of the set, told which
// tenant's account lost the interest (an inbox name means nothing without
// its account: two tenants may use the same one). fn runs on the
// connections' reader goroutines, several at once, and must not block;
// nil stops the calls.
func (s *Set) OnInterestLost(fn func(tenant tenancy.TenantID, subject string)) {
	for t, c := range s.conns {
		if fn == nil {
			c.OnInterestLost(nil)
			continue
		}
		c.OnInterestLost(func(subject string) { fn(t, subject) })
	}
}

// Close closes every connection, waiting for their goroutines. Idempotent.
func (s *Set) Close() error {
	var errs []error
	for t, c := range s.conns {
		if err := c.Close(); err != nil {
			errs = append(errs, fmt.Errorf("account %q: %w", s.account[t], err))
		}
	}
	return errors.Join(errs...)
}

// ParseLogins reads the leaf logins of the accounts mode,
// ACCOUNT=user:password,... (a password may hold ':', no entry a ','),
// and gives each the tenant its account is mapped to in tenants. Every
// mapped account needs exactly one login and every login a mapped
// account. Errors name an entry by its position or its account, never by
// its text: it holds a password.
func ParseLogins(list string, tenants map[string]tenancy.TenantID) ([]Login, error) {
	var out []Login
	seen := map[string]bool{}
	for i, entry := range strings.Split(list, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		account, cred, ok := strings.Cut(entry, "=")
		user, password, ok2 := strings.Cut(cred, ":")
		account, user = strings.TrimSpace(account), strings.TrimSpace(user)
		if !ok || !ok2 || account == "" || user == "" || password == "" {
			return nil, fmt.Errorf("entry %d is not ACCOUNT=user:password", i+1)
		}
		tenant, mapped := tenants[account]
		switch {
		case !mapped:
			return nil, fmt.Errorf("entry %d: account %q is not mapped to a tenant", i+1, account)
		case seen[account]:
			return nil, fmt.Errorf("entry %d: account %q has a login already", i+1, account)
		}
		seen[account] = true
		out = append(out, Login{Tenant: tenant, Account: account, User: user, Password: password})
	}
	for _, account := range slices.Sorted(maps.Keys(tenants)) {
		if !seen[account] {
			return nil, fmt.Errorf("account %q has no login: each tenant account needs a leaf user bound to it", account)
		}
	}
	return out, nil
}
