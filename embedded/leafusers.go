package embedded

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats-server/v2/server"
)

// leafUsers sets the leafnode listener's authorization: LeafUser alone,
// or, with LeafAccounts, a users list of LeafUser (the default account)
// and one user per account bound to it, each with a password made here.
// An account the configuration does not define is refused by name, before
// nats-server's own check says "cannot find local account".
func leafUsers(opts *server.Options, cfg NATSConfig) ([]LeafLogin, error) {
	if len(cfg.LeafAccounts) == 0 {
		opts.LeafNode.Username, opts.LeafNode.Password = LeafUser, cfg.LeafPassword
		return nil, nil
	}
	if len(opts.TrustedOperators) > 0 {
		return nil, errors.New("embedded nats: leaf users per account need accounts defined in the configuration file; an operator's (JWT) accounts take no leafnode users")
	}
	defined := map[string]bool{}
	for _, a := range opts.Accounts {
		defined[a.Name] = true
	}
	opts.LeafNode.Users = []*server.User{{Username: LeafUser, Password: cfg.LeafPassword}}
	logins := make([]LeafLogin, 0, len(cfg.LeafAccounts))
	seen := map[string]bool{}
	for _, account := range cfg.LeafAccounts {
		switch {
		case !defined[account]:
			return nil, fmt.Errorf("embedded nats: leaf user for account %q: the configuration file defines no such account", account)
		case seen[account]:
			return nil, fmt.Errorf("embedded nats: leaf user for account %q: the account is named twice", account)
		}
		seen[account] = true
		l := LeafLogin{Account: account, User: LeafUser + "-" + account, Password: newPassword()}
		logins = append(logins, l)
		// nats-server keeps only the account's name for a leaf user
		// (server/opts.go builds the same unregistered Account for
		// `account:` in a configuration file).
		opts.LeafNode.Users = append(opts.LeafNode.Users, &server.User{Username: l.User, Password: l.Password, Account: server.NewAccount(account)})
	}
	return logins, nil
}
