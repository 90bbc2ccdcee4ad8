package auth

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// RequestInfoHeader is the header nats-server puts on a request that
// crossed a service import: JSON naming the requester's account ("acc").
// The server sets it itself; a client cannot forge it on such a request.
const RequestInfoHeader = "Nats-Request-Info"

// Accounts maps NATS accounts to tenants: the accounts mode. In it, a
// request's tenant is the account it came from, never anything the request
// says.
type Accounts struct {
	tenants map[string]tenancy.TenantID
}

// NewAccounts builds the map; an empty map is the single-account mode.
func NewAccounts(m map[string]tenancy.TenantID) *Accounts {
	a := &Accounts{tenants: map[string]tenancy.TenantID{}}
	for k, v := range m {
		a.tenants[k] = v
	}
	return a
}

// Enabled reports whether the accounts mode is on.
func (a *Accounts) Enabled() bool { return a != nil && len(a.tenants) > 0 }

// ErrNoAccount: a request that did not come through a tenant account's
// service import (it carries no request info).
var ErrNoAccount = errors.New("this service takes requests from tenant accounts (through their service import) only")

// ErrUnknownAccount: the account is not mapped to a tenant.
var ErrUnknownAccount = errors.New("the NATS account is not mapped to a tenant")

// TenantOf is the tenant of the account named in a request's info header.
func (a *Accounts) TenantOf(requestInfo string) (tenancy.TenantID, error) {
	if requestInfo == "" {
		return tenancy.TenantID{}, ErrNoAccount
	}
	var info struct {
		Account string `json:"acc"`
	}
	if err := json.Unmarshal([]byte(requestInfo), &info); err != nil || info.Account == "" {
		return tenancy.TenantID{}, ErrNoAccount
	}
	t, ok := a.tenants[info.Account]
	if !ok {
		return tenancy.TenantID{}, fmt.Errorf("%w (%s)", ErrUnknownAccount, info.Account)
	}
	return t, nil
}
