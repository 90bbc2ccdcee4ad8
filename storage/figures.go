package storage

import "github.com/queenbridge/queenbridge/internal/tenancy"

// Stats are counters of the database calls' failure paths.
type Stats struct {
	StatementTimeouts     uint64 // statements cancelled at StatementTimeout
	QuarantinedConnection uint64 // pooled connections destroyed instead of reused
	// Retries counts the calls run again because PostgreSQL asked for it
	// (a deadlock, a serialization failure) or their connection was lost
	// before they were sent, by statement (pgwire/retry.go's statementName).
	Retries map[string]uint64
	// MigrationLockWaits counts the migration steps that gave up waiting
	// for a lock and were tried again (pgwire/schema/migrate_wait.go).
	MigrationLockWaits uint64
}

// GroupLag is a consumer group's lag on a queue: the partitions' last
// offsets minus its cursors, summed.
type GroupLag struct {
	Tenant       tenancy.TenantID
	Queue, Group string
	Lag          int64
}
