package ownership

import (
	"encoding/json"
	"strconv"

	"github.com/zeebo/xxh3"
)

// The owners' table as producers read it, so that a partition-aware
// client sends each partition's items to the bridge that owns it
// (docs/ownership.md, "Producers that reach the owner"). A bridge answers
// it on TableSubject and announces every change of its own table on
// TableChangedSubject. A client's table is advice: the owner checks
// ownership as for any push, so a stale table costs a forward, never a
// wrong write.

// TableSubject is the request subject that answers the owners' table.
func TableSubject(prefix string) string { return prefix + ".v1.owners" }

// TableChangedSubject carries the table whenever a bridge's changes.
func TableChangedSubject(prefix string) string { return prefix + ".v1.owners.changed" }

// PushSubject is bridge id's own push subject: the push API, answered
// by that bridge alone. In the single-account mode PushSubject.<tenant>
// pushes for that tenant.
func PushSubject(prefix, id string) string { return prefix + ".v1.owner." + id }

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

// appendOwners appends the JSON of t.
func appendOwners(dst []byte, t *OwnersTable) []byte {
	out, _ := json.Marshal(t) // strings and numbers: nothing in it fails to encode
	return append(dst, out...)
}

// clientJSON renders t for clients.
func clientJSON(prefix string, t *table) []byte {
	ct := OwnersTable{Buckets: len(t.owner), Owners: t.owner, Bridges: make([]OwnerEntry, len(t.members))}
	var h uint64
	for i, id := range t.members {
		ct.Bridges[i] = OwnerEntry{ID: id, Subject: PushSubject(prefix, id)}
		h = xxh3.HashStringSeed(id, h)
	}
	ct.Version = strconv.FormatUint(h, 16) + "-" + strconv.Itoa(len(t.members)) + "-" + strconv.Itoa(len(t.owner))
	return appendOwners(nil, &ct)
}

// TableJSON is this bridge's owners' table as clients read it (without a
// tenant). The slice must not be changed.
func (r *Router) TableJSON() []byte { return r.tab.Load().client }
