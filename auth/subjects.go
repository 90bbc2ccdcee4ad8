package auth

import (
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// SubjectTenant is the tenant a push subject names in the single-account
// mode, which trusts every NATS client: base itself (<prefix>.v1.push, or
// a bridge's own push subject) is the default tenant, base.<uuid> that
// tenant. A subject that is neither is an error that names it.
func SubjectTenant(subject, base string) (tenancy.TenantID, error) {
	if subject == base {
		return tenancy.TenantID{}, nil
	}
	id, err := uuid.Parse(strings.TrimPrefix(subject, base+"."))
	if err != nil || !strings.HasPrefix(subject, base+".") {
		return tenancy.TenantID{}, fmt.Errorf("subject %q: the tenant must be a UUID", subject)
	}
	return tenancy.TenantID(id), nil
}
