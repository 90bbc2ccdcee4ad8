package tenancy

import "github.com/google/uuid"

// TenantID is a tenant: the UUID every queue, partition, message and
// consumer group belongs to. The zero TenantID is the default tenant (the
// single-account mode's, and HTTP's without tokens).
type TenantID [16]byte

// String is the tenant's UUID text.
func (t TenantID) String() string { return uuid.UUID(t).String() }

// Parse reads a tenant's UUID text.
func Parse(s string) (TenantID, error) {
	id, err := uuid.Parse(s)
	return TenantID(id), err
}
