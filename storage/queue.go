package storage

import (
	"encoding/json"

	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// QueueOptions are a queue's settings.
type QueueOptions struct {
	EncryptionEnabled  bool  `json:"encryptionEnabled"`
	DedupWindowSeconds int32 `json:"dedupWindowSeconds"`
	RetentionSeconds   int32 `json:"retentionSeconds"`
	// Keyed: a payload of the queue was sealed under a key id, and KeyID is
	// the highest one recorded (RecordKeyID); what seals the queue now.
	Keyed bool  `json:"-"`
	KeyID uint8 `json:"-"`
}

// Queue is one row of queen.queues.
type Queue struct {
	Tenant    tenancy.TenantID
	Name      string
	Namespace string
	Task      string
	Options   QueueOptions
	// OtherOptions are options set on the queue that this service stores
	// but does not act on (Queen's leaseTime, retryLimit, ...), as sent.
	OtherOptions map[string]json.RawMessage
	// Exists is false when no row exists yet: Options are then the defaults a
	// push would create it with.
	Exists bool
}

// QueueUpdate changes the options that are set and keeps the others.
type QueueUpdate struct {
	EncryptionEnabled  *bool
	DedupWindowSeconds *int32
	RetentionSeconds   *int32
	// Other options are merged into the stored ones (a key sent again
	// replaces its value).
	Other map[string]json.RawMessage
}
