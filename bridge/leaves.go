package bridge

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/queenbridge/queenbridge/internal/leaf"
	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// checkLeafLogins holds LeafLogins to the accounts mode: with a leafnode
// listener, every account of NATSAccounts has exactly one login, for that
// account's tenant (a tenant without one could never be delivered to,
// and one with the wrong tenant would deliver into another's account);
// without the accounts mode there are none.
func (c *Config) checkLeafLogins() error {
	if len(c.NATSAccounts) == 0 || c.LeafURL == "" {
		if len(c.LeafLogins) > 0 {
			return fmt.Errorf("bridge: LeafLogins are for the accounts mode with a leafnode listener (NATSAccounts and LeafURL)")
		}
		return nil
	}
	seen := map[string]bool{}
	for _, l := range c.LeafLogins {
		tenant, mapped := c.NATSAccounts[l.Account]
		switch {
		case !mapped:
			return fmt.Errorf("bridge: the leaf login of account %q: the account is not mapped to a tenant", l.Account)
		case tenant != l.Tenant:
			return fmt.Errorf("bridge: the leaf login of account %q is for tenant %s, the account's is %s", l.Account, l.Tenant, tenant)
		case seen[l.Account]:
			return fmt.Errorf("bridge: account %q has two leaf logins", l.Account)
		}
		seen[l.Account] = true
	}
	for _, account := range slices.Sorted(maps.Keys(c.NATSAccounts)) {
		if !seen[account] {
			return fmt.Errorf("bridge: account %q has no leaf login: its tenant's JetStream consumers could not be delivered to", account)
		}
	}
	return nil
}

// leafLogins are the logins of the leaf connections JetStream consumers
// are delivered over: in the accounts mode one per tenant account; else
// LeafUser's, for the default tenant, the only one NATS requests act for.
func (c *Config) leafLogins() []leaf.Login {
	if len(c.NATSAccounts) > 0 {
		return c.LeafLogins
	}
	return []leaf.Login{{Tenant: tenancy.TenantID{}, User: c.LeafUser, Password: c.LeafPassword}}
}

// dialLeaves connects the leaf connections of c's logins to LeafURL:
// nil without a leafnode listener.
func dialLeaves(ctx context.Context, c *Config) (*leaf.Set, error) {
	if c.LeafURL == "" {
		return nil, nil
	}
	set, err := leaf.DialSet(ctx, leaf.Config{URL: c.LeafURL, Name: "queen-bridge", Logger: c.Logger}, c.leafLogins())
	if err != nil {
		return nil, fmt.Errorf("bridge: %w", err)
	}
	return set, nil
}
