package spool

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// ReplayFunc replays a chunk of records, oldest first, and returns the ones
// that must stay in the spool (not written this time). An error means the
// chunk's outcome is unknown: the file is kept whole and tried again later.
type ReplayFunc func(ctx context.Context, recs []Record) (keep []Record, err error)

// DrainChunk is how many records one ReplayFunc call gets at most.
const DrainChunk = 512

// Drain seals the file being written, then replays every sealed file,
// oldest first. A file is removed only when all its records were replayed
// and the ones to keep were appended again (fsynced) to the current file.
// It returns how many records left the spool.
func (s *Spool) Drain(ctx context.Context, replay ReplayFunc) (int, error) {
	if err := s.seal(ctx); err != nil {
		return 0, err
	}
	s.mu.Lock()
	var sealed []uint64
	for seq := range s.files {
		if seq < s.current {
			sealed = append(sealed, seq)
		}
	}
	s.mu.Unlock()
	sort.Slice(sealed, func(i, j int) bool { return sealed[i] < sealed[j] })
	drained := 0
	for _, seq := range sealed {
		n, err := s.drainFile(ctx, seq, replay)
		drained += n
		if err != nil {
			return drained, err
		}
	}
	return drained, nil
}

// seal rolls the writer to a new file unless the current one is empty.
func (s *Spool) seal(ctx context.Context) error {
	c := ctlReq{done: make(chan error, 1), fn: func(w *file) (*file, error) {
		if w.size == 0 {
			return w, nil
		}
		if err := w.f.Sync(); err != nil {
			return w, err
		}
		return s.roll(w)
	}}
	select {
	case s.ctl <- c:
	case <-s.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-c.done
}

func (s *Spool) drainFile(ctx context.Context, seq uint64, replay ReplayFunc) (int, error) {
	path := filepath.Join(s.cfg.Dir, fileName(seq))
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("spool: read %s: %w", path, err)
	}
	var recs []Record
	walk(data, func(r Record) { recs = append(recs, r) }) // past damage as scan was
	var keep []Record
	for start := 0; start < len(recs); start += DrainChunk {
		chunk := recs[start:min(start+DrainChunk, len(recs))]
		k, err := replay(ctx, chunk)
		if err != nil {
			return 0, err
		}
		keep = append(keep, k...)
	}
	if err := s.append(ctx, keep, true); err != nil {
		return 0, fmt.Errorf("spool: keep %d records of %s: %w", len(keep), path, err)
	}
	if err := os.Remove(path); err != nil {
		return 0, fmt.Errorf("spool: remove %s: %w", path, err)
	}
	if err := syncPath(s.cfg.Dir); err != nil {
		return 0, err
	}
	s.mu.Lock()
	fi := s.files[seq]
	delete(s.files, seq)
	s.mu.Unlock()
	if fi != nil {
		s.records.Add(-fi.records)
		s.bytes.Add(-fi.bytes)
	}
	return len(recs) - len(keep), nil
}
