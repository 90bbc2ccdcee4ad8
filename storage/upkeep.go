package storage

// Switches are the bridge-wide switches kept in queen.system_state: each a
// row {"enabled": bool} under its key; a missing row is off.
type Switches struct {
	Maintenance    bool // key 'maintenance': pushes go to the spool
	PopMaintenance bool // key 'pop_maintenance': pops deliver nothing
}

// RetentionResult is what one retention step removed.
type RetentionResult struct {
	Partitions int
	Segments   int64
	Txns       int64
}

// PurgeResult is what one purge step (the segments deleted queues left)
// did.
type PurgeResult struct {
	Partitions int   // deleted partitions looked at
	Rows       int64 // segment and hash-blob rows removed
	Done       int   // deleted partitions with nothing left
}
