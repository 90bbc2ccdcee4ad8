// Package storage holds the plain types of what the log's database keeps
// and returns: a stored message, a queue's row and the change of its
// settings, the bridge-wide switches, what a retention or purge step
// removed, a group's lag, the database calls' failure counters, and the
// rows of Queen's message routes (a partition with its groups' cursor
// rows, a message found by its transactionId, a list's page).
//
// Why a package of its own: pgwire returns these values, and the rooms
// that read storage (readside, queues, durability) and metrics take them
// through their own narrow Store interfaces. Declared in pgwire, the types
// would make every such room import the database room for a struct;
// declared in a room, pgwire would have to import upward. So they sit
// below both, as River's rivertype sits below its drivers and its client.
//
// It holds data only: no SQL, no pgx, no behaviour beyond what a field
// means. It imports nothing of the project but internal/tenancy and
// segment.
//
// Goroutines: none. Failure model: none of its own; the values say what
// the database answered.
package storage
