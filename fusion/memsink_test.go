package fusion

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/segment"
)

// memSink is an in-memory Sink that behaves like log_push_multi_v2: offsets
// from 1, the probe over (Verified, last] and the forgotten range inside the window, duplicate
// segments write nothing. It fails the test if two bundles ever hold the same
// partition at once.
type memSink struct {
	t     testing.TB
	delay func(call int) time.Duration // per call; nil: none
	fail  func(call int) error         // per call; nil: never
	gate  chan struct{}                // when set, the first call waits on it

	// mu guards the fields below: fusion runs several bundles at once (one
	// goroutine each), and the test reads them meanwhile.
	mu       sync.Mutex
	calls    int
	parts    map[string]*memPart
	inFlight map[string]bool
	bundles  []int             // segments per call, in call order
	writes   [][]segment.Write // every call's writes
}

type memPart struct {
	pid    int64
	window int32
	frames []memFrame // frames[i] is at offset i+1
}

type memFrame struct {
	hash [16]byte
	id   [16]byte
	at   time.Time
}

func newMemSink(t testing.TB) *memSink {
	return &memSink{t: t, parts: map[string]*memPart{}, inFlight: map[string]bool{}}
}

func memKey(tenant [16]byte, q, p string) string { return fmt.Sprintf("%x\x1f%s\x1f%s", tenant, q, p) }

func (m *memSink) part(k string) *memPart {
	p := m.parts[k]
	if p == nil {
		p = &memPart{pid: int64(len(m.parts) + 1), window: 60}
		m.parts[k] = p
	}
	return p
}

// setWindow sets a partition's window (creating it).
func (m *memSink) setWindow(q, p string, w int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.part(memKey([16]byte{}, q, p)).window = w
}

// foreignWrite stores frames as another writer would.
func (m *memSink) foreignWrite(q, p string, txids ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mp := m.part(memKey([16]byte{}, q, p))
	for _, tx := range txids {
		mp.frames = append(mp.frames, memFrame{hash: segment.Hash(tx), id: [16]byte{0xf0, byte(len(mp.frames))}, at: time.Now()})
	}
}

func (m *memSink) PushBundle(ctx context.Context, writes []segment.Write) ([]segment.Result, error) {
	m.mu.Lock()
	call := m.calls
	m.calls++
	m.bundles = append(m.bundles, len(writes))
	m.writes = append(m.writes, writes)
	for _, w := range writes {
		k := memKey(w.Tenant, w.Queue, w.Partition)
		if m.inFlight[k] {
			m.t.Errorf("two flushes of partition %q at once", k)
		}
		m.inFlight[k] = true
	}
	gate := m.gate
	if call > 0 {
		gate = nil
	}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		for _, w := range writes {
			delete(m.inFlight, memKey(w.Tenant, w.Queue, w.Partition))
		}
		m.mu.Unlock()
	}()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if m.delay != nil {
		select {
		case <-time.After(m.delay(call)):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if m.fail != nil {
		if err := m.fail(call); err != nil {
			return nil, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	out := make([]segment.Result, len(writes))
	for i, w := range writes {
		if len(w.Hashes) != segment.HashSize*int(w.Count) {
			return nil, errors.New("memsink: hash stride")
		}
		frames, err := segment.UnpackAll(w.Blob)
		if err != nil || len(frames) != int(w.Count) {
			return nil, fmt.Errorf("memsink: blob of %d frames for count %d: %v", len(frames), w.Count, err)
		}
		mp := m.part(memKey(w.Tenant, w.Queue, w.Partition))
		win := max(mp.window, w.MinWindowSeconds)
		res := segment.Result{PartitionID: mp.pid, WindowSeconds: mp.window, CreatedAt: now}
		if win > 0 {
			for k := 0; k < int(w.Count); k++ {
				var h [16]byte
				copy(h[:], w.Hashes[16*k:])
				for off := int64(1); off <= int64(len(mp.frames)); off++ {
					if off <= w.Verified && (off <= w.ForgottenLo || off > w.ForgottenHi) {
						continue // outside both probe ranges
					}
					f := mp.frames[off-1]
					if f.hash == h && now.Sub(f.at) <= time.Duration(win)*time.Second {
						res.Dups = append(res.Dups, segment.Dup{Index: k, Offset: off})
						break
					}
				}
			}
		}
		if len(res.Dups) > 0 {
			res.Status = segment.Duplicate
		} else {
			res.Status, res.BaseOffset = segment.Queued, int64(len(mp.frames))+1
			for k, f := range frames {
				var h [16]byte
				copy(h[:], w.Hashes[16*k:])
				mp.frames = append(mp.frames, memFrame{hash: h, id: f.ID, at: now})
			}
		}
		out[i] = res
	}
	return out, nil
}

func (m *memSink) SegmentAt(_ context.Context, pid, off int64) (segment.Stored, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.parts {
		if p.pid == pid && off >= 1 && off <= int64(len(p.frames)) {
			f := p.frames[off-1]
			return segment.Stored{PartitionID: pid, BaseOffset: off, Count: 1, Blob: segment.Pack(nil, []segment.Frame{{ID: f.id}})}, nil
		}
	}
	return segment.Stored{}, errors.New("memsink: segment gone")
}

func (m *memSink) callCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

func (m *memSink) bundleSizes() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]int(nil), m.bundles...)
}

func (m *memSink) stored(q, p string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.part(memKey([16]byte{}, q, p)).frames)
}

// lastVerified returns the Verified sent with the latest write of (q, p).
func (m *memSink) lastVerified(q, p string) int64 {
	if w := m.lastWrite(q, p); w.Queue != "" {
		return w.Verified
	}
	return -1
}

// lastWrite returns the latest write of (q, p) (zero if none).
func (m *memSink) lastWrite(q, p string) segment.Write {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.writes) - 1; i >= 0; i-- {
		for _, w := range m.writes[i] {
			if w.Queue == q && w.Partition == p {
				return w
			}
		}
	}
	return segment.Write{}
}

// hashingSink is a memSink that can also read stored hashes (HashSource).
type hashingSink struct{ *memSink }

func (h hashingSink) StoredHashes(_ context.Context, pid, after, upTo int64, window int32) ([]segment.HashAt, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []segment.HashAt
	for _, p := range h.parts {
		if p.pid != pid {
			continue
		}
		for off := after + 1; off <= upTo && off <= int64(len(p.frames)); off++ {
			f := p.frames[off-1]
			if time.Since(f.at) <= time.Duration(window)*time.Second {
				out = append(out, segment.HashAt{Hash: f.hash, Offset: off, At: f.at})
			}
		}
	}
	return out, nil
}

// callBytes returns, for every call in order, the bytes it carried: sent
// (payload blobs and hash blobs as they reached the sink) and counted (what
// Config.BundleMaxBytes counts, from the decoded frames).
func (m *memSink) callBytes() (sent, counted []int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, writes := range m.writes {
		var s, c int64
		for _, w := range writes {
			s += int64(len(w.Blob) + len(w.Hashes))
			c += SegmentOverhead
			frames, err := segment.UnpackAll(w.Blob)
			if err != nil {
				m.t.Errorf("memsink: %v", err)
			}
			for i := range frames {
				c += frameBytes(&frames[i])
			}
		}
		sent, counted = append(sent, s), append(counted, c)
	}
	return sent, counted
}

// storedIDs returns the message ids stored in (q, p), in offset order.
func (m *memSink) storedIDs(q, p string) [][16]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids [][16]byte
	for _, f := range m.part(memKey([16]byte{}, q, p)).frames {
		ids = append(ids, f.id)
	}
	return ids
}

// callsWith returns the indices of the calls that wrote (q, p).
func (m *memSink) callsWith(q, p string) []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int
	for i, writes := range m.writes {
		for _, w := range writes {
			if w.Queue == q && w.Partition == p {
				out = append(out, i)
				break
			}
		}
	}
	return out
}
