package fusion

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/segment"
)

// Sink commits bundles; pgwire.DB satisfies it.
type Sink interface {
	// PushBundle writes every segment in one transaction and answers one
	// result per write, in order, or an error when nothing is known written.
	PushBundle(ctx context.Context, writes []segment.Write) ([]segment.Result, error)
	// SegmentAt returns the stored segment covering offset off of partition
	// pid; an error when it is gone or unreadable.
	SegmentAt(ctx context.Context, pid, off int64) (segment.Stored, error)
}

// HashSource is implemented by Sinks that can read back the hashes stored in
// a range of a partition (pgwire.DB does). With it, fusion reads a range
// written by another writer (another bridge, or this one before a restart)
// once and then stops probing it; without it, the probe keeps covering the
// range until the range is older than the window.
type HashSource interface {
	StoredHashes(ctx context.Context, pid, after, upTo int64, window int32) ([]segment.HashAt, error)
}

// FlushMeter is implemented by Sinks that can measure how long the database
// takes to flush a commit to disk (pgwire.DB does). Fusion asks every
// Config.FlushProbeEvery and sets how many bundles may be in flight from it
// (inflight.go); without it the limit stays at Config.InFlightInitial.
type FlushMeter interface {
	FlushLatency(ctx context.Context) (time.Duration, error)
}

// Status is a frame's verdict.
type Status uint8

const (
	// Queued: committed at Offset.
	Queued Status = iota + 1
	// Duplicate: already stored at Offset as MessageID; nothing written.
	Duplicate
	// Error: the bundle carrying the frame failed; Err says why.
	Error
)

func (s Status) String() string {
	switch s {
	case Queued:
		return "queued"
	case Duplicate:
		return "duplicate"
	case Error:
		return "error"
	}
	return "unknown"
}

// Verdict is the outcome of one frame.
type Verdict struct {
	Status      Status
	PartitionID int64
	Offset      int64     // Queued, Duplicate
	CreatedAt   time.Time // Queued: the bundle timestamp
	// MessageID is the stored message's id: the frame's own when Queued, the
	// original's when Duplicate (zero when retention removed it).
	MessageID [16]byte
	Err       error // Error only
}

// Submission is one request's frames for one partition.
type Submission struct {
	Tenant    tenancy.TenantID
	Queue     string
	Partition string
	Frames    []segment.Frame
	// Minted, when set, has one entry per frame: true where the frame's
	// transactionId is an id the bridge has just minted (the client sent
	// none). Nothing stored can carry it yet, so a segment of only such
	// frames needs neither the local check nor the probe. Default nil: none.
	Minted []bool
	// Marks, when set, has one entry per frame: the publish relay's mark
	// of each (segment.Mark; Slot "" for a frame without one). The segment
	// that stores a frame stores its mark in the same transaction. Default
	// nil: none (an ordinary push).
	Marks []segment.Mark
	// MinWindowSeconds > 0 marks replayed frames: their segment is probed
	// over at least this window whatever the queue's. Default 0.
	MinWindowSeconds int32
	// Done receives one verdict per frame, in frame order, exactly once, from
	// a fusion goroutine, once every frame has one. It must not block for long.
	Done func([]Verdict)
}

// request is a Submission in flight. Its verdict slots are written by
// whichever flush decides each frame (flushes of one partition are sequential,
// duplicate resolution may overlap the next flush); the atomic countdown
// publishes them to the goroutine that calls Done.
type request struct {
	sub       Submission
	hashes    [][segment.HashSize]byte
	verdicts  []Verdict
	remaining atomic.Int32
	bytes     int64
	f         *Fusion
}

// settle records frame idx's verdict and calls Done after the last one.
func (r *request) settle(idx int32, v Verdict) {
	r.verdicts[idx] = v
	if r.remaining.Add(-1) == 0 {
		r.f.pendingBytes.Add(-r.bytes)
		r.sub.Done(r.verdicts)
	}
}

// item is one frame waiting in, or riding in, a segment.
type item struct {
	req *request
	idx int32
}

func (it item) hash() [segment.HashSize]byte { return it.req.hashes[it.idx] }
func (it item) minted() bool {
	m := it.req.sub.Minted
	return int(it.idx) < len(m) && m[it.idx]
}
func (it item) frame() *segment.Frame { return &it.req.sub.Frames[it.idx] }

// mark is the frame's publish relay mark (Slot "": none).
func (it item) mark() segment.Mark {
	m := it.req.sub.Marks
	if int(it.idx) < len(m) {
		return m[it.idx]
	}
	return segment.Mark{}
}

// partKey identifies a partition: tenant \x1f queue \x1f partition, as a
// comparable struct so that map look-ups build no string.
type partKey struct {
	tenant           tenancy.TenantID
	queue, partition string
}
