package ownership

import (
	"strconv"

	"github.com/queenbridge/queenbridge/jsonapi"

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

// clientJSON renders t for clients.
func clientJSON(prefix string, t *table) []byte {
	ct := jsonapi.OwnersTable{Buckets: len(t.owner), Owners: t.owner, Bridges: make([]jsonapi.OwnerEntry, len(t.members))}
	var h uint64
	for i, id := range t.members {
		ct.Bridges[i] = jsonapi.OwnerEntry{ID: id, Subject: PushSubject(prefix, id)}
		h = xxh3.HashStringSeed(id, h)
	}
	ct.Version = strconv.FormatUint(h, 16) + "-" + strconv.Itoa(len(t.members)) + "-" + strconv.Itoa(len(t.owner))
	return jsonapi.AppendOwners(nil, &ct)
}

// TableJSON is this bridge's owners' table as clients read it (without a
// tenant). The slice must not be changed.
func (r *Router) TableJSON() []byte { return r.tab.Load().client }
