package segment

import (
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// Write is one segment on its way to PostgreSQL: the frames one partition
// received in one flush.
type Write struct {
	Tenant    tenancy.TenantID // zero UUID: the default tenant
	Queue     string
	Partition string
	Count     int32  // frames in the segment
	Hashes    []byte // the hash blob, HashSize × Count bytes
	// Verified: every frame stored in this partition at an offset ≤ Verified
	// inside the deduplication window is known to the writer, so the probe
	// may start above it. 0 probes the whole window.
	Verified int64
	// ForgottenLo and ForgottenHi, when ForgottenHi > ForgottenLo, name a
	// range (ForgottenLo, ForgottenHi] at or below Verified that the writer
	// wrote but no longer remembers although it may be inside the window: it
	// is probed too, and only it, so the probe's cost follows what was
	// forgotten, not the partition's history. Default 0, 0: none.
	ForgottenLo, ForgottenHi int64
	// MinWindowSeconds widens the deduplication probe of this segment to at
	// least this many seconds, even on a queue whose window is 0: replayed
	// spool records are always probed. Default 0 (the queue's window).
	MinWindowSeconds int32
	Blob             []byte // the payload blob
	// PartitionID is the partition's id when the writer knows it from an
	// earlier result, 0 when not: known ids spare the bundle call the look-up
	// by name (it still checks that the id names this partition).
	PartitionID int64
	// QueueID is the partition's queue id from the same result, 0 when not
	// known. With both ids known, the segment can take the known-partition
	// statement, which checks them against the partition row.
	QueueID int64
	// Marks are the publish relay's marks of the frames (one per slot,
	// the highest of the segment's frames): the transaction that stores
	// the segment also stores them, so a replay knows exactly what is
	// stored. Default nil: an ordinary push, which writes none.
	Marks []Mark
}

// Mark is a frame's place in the WAL of the database the publish relay
// read it from: the slot it came through (the source's system identifier,
// '/', the slot's name), the commit position of its transaction and its
// index there. A partition's frames of one slot are stored in that order.
type Mark struct {
	Slot  string
	LSN   uint64
	Index int32
}

// Less orders two marks of one slot.
func (m Mark) Less(o Mark) bool {
	return m.LSN < o.LSN || (m.LSN == o.LSN && m.Index < o.Index)
}

// AddMark folds m into marks: the highest per slot.
func AddMark(marks []Mark, m Mark) []Mark {
	for i := range marks {
		if marks[i].Slot == m.Slot {
			if marks[i].Less(m) {
				marks[i] = m
			}
			return marks
		}
	}
	return append(marks, m)
}

// Status is the verdict of one segment.
type Status uint8

const (
	// Queued: committed; frame k is at BaseOffset + k.
	Queued Status = iota + 1
	// Duplicate: some frames were already stored; nothing of the segment was
	// written. Dups lists them; the other frames must be sent again.
	Duplicate
	// Failed: nothing of the segment was written, because the transaction
	// that carried it failed (Err says why), while other segments of the
	// same bundle, written in a transaction of their own, committed.
	Failed
)

func (s Status) String() string {
	switch s {
	case Queued:
		return "queued"
	case Duplicate:
		return "duplicate"
	case Failed:
		return "failed"
	}
	return "unknown"
}

// Dup names an incoming frame (Index in the segment) already stored at Offset.
type Dup struct {
	Index  int   `json:"i"`
	Offset int64 `json:"off"`
}

// Result is the verdict of one Write, in the order the writes were sent.
type Result struct {
	PartitionID int64
	// QueueID is the partition's queue, as the database numbers it.
	QueueID int64
	// WindowSeconds is the queue's deduplication window when the bundle ran.
	WindowSeconds int32
	Status        Status
	BaseOffset    int64     // Queued only
	CreatedAt     time.Time // the bundle timestamp
	Dups          []Dup     // Duplicate only
	Err           error     // Failed only
}

// Stored is a segment read back from PostgreSQL.
type Stored struct {
	PartitionID int64
	BaseOffset  int64
	Count       int
	CreatedAt   time.Time
	Blob        []byte
}

// HashAt is one stored frame's deduplication hash, its offset, and when its
// segment was committed.
type HashAt struct {
	Hash   [HashSize]byte
	Offset int64
	At     time.Time
}
