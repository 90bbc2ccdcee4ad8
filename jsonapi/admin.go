package jsonapi

import (
	"encoding/json"
	"strconv"

	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// DecodeMaintenance reads a maintenance request: a read ({} or an empty
// body: nil) or a set ({"enabled": bool}).
func DecodeMaintenance(body []byte) (*bool, error) {
	var req struct {
		Enabled *bool `json:"enabled"`
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, Badf("maintenance body: %s", err.Error())
		}
	}
	return req.Enabled, nil
}

// Maintenance is the answer to a maintenance request, with Queen's
// fields: BufferHealthy says whether pushes PostgreSQL cannot take have
// somewhere to go (a spool that is not full).
type Maintenance struct {
	On            bool
	Buffered      int64 // records waiting in the spool
	BufferHealthy bool
}

// AppendMaintenance appends {"maintenanceMode","bufferedMessages",
// "bufferHealthy","message"}.
func AppendMaintenance(out []byte, m Maintenance) []byte {
	msg := "maintenance mode is off: pushes go to PostgreSQL"
	if m.On {
		msg = "maintenance mode is on: pushes are buffered in the spool and drained when it ends"
	}
	if !m.BufferHealthy {
		msg += "; the spool cannot take more (none configured, or full)"
	}
	out = append(out, `{"bufferHealthy":`...)
	out = strconv.AppendBool(out, m.BufferHealthy)
	out = append(out, `,"bufferedMessages":`...)
	out = strconv.AppendInt(out, m.Buffered, 10)
	out = append(out, `,"maintenanceMode":`...)
	out = strconv.AppendBool(out, m.On)
	out = append(out, `,"message":`...)
	out = AppendString(out, msg)
	return append(out, '}')
}

// Health is GET /health's answer: healthy (200) when PostgreSQL and NATS
// (when configured) are up, else unhealthy (503). Each is "up", "down" or,
// for NATS, "disabled".
func Health(postgres, nats string) (int, []byte) {
	status, word := 200, "healthy"
	if postgres == "down" || nats == "down" {
		status, word = 503, "unhealthy"
	}
	out := append([]byte(`{"status":`), AppendString(nil, word)...)
	out = append(append(out, `,"postgres":`...), AppendString(nil, postgres)...)
	out = append(append(out, `,"nats":`...), AppendString(nil, nats)...)
	return status, append(out, '}')
}

// OwnersTable is the owners' table as producers read it (<prefix>.v1.owners,
// <prefix>.v1.owners.changed; docs/ownership.md).
type OwnersTable struct {
	// Version names the member list the table was computed from: equal
	// versions are equal tables.
	Version string `json:"version"`
	// Tenant is the requester's tenant, which the bucket hash takes; set
	// in the answer to a request in the accounts mode only (the account
	// decides it). Never in announcements.
	Tenant  string       `json:"tenant,omitempty"`
	Buckets int          `json:"buckets"`
	Bridges []OwnerEntry `json:"bridges"`
	// Owners is, per bucket, the index into Bridges of its owner.
	Owners []int32 `json:"owners"`
}

// OwnerEntry is one bridge of the table.
type OwnerEntry struct {
	ID      string `json:"id"`
	Subject string `json:"subject"` // its own push subject
}

// EncodeOwners is the JSON of t.
func EncodeOwners(t *OwnersTable) []byte {
	out, _ := json.Marshal(t) // strings and numbers: nothing in it fails to encode
	return out
}

// WithTenant is an encoded owners' table (without a tenant) with tenant
// set, for the answer to a request in the accounts mode.
func WithTenant(table []byte, tenant tenancy.TenantID) []byte {
	out := make([]byte, 0, len(table)+50)
	out = append(out, `{"tenant":"`...)
	out = AppendUUID(out, tenant)
	out = append(out, `",`...)
	return append(out, table[1:]...)
}
