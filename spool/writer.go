package spool

import (
	"fmt"
	"os"
	"path/filepath"
)

// file is the writer goroutine's open file.
type file struct {
	seq  uint64
	f    *os.File
	size int64
}

// create opens a new, empty file and makes its directory entry durable
// before anything in it can be acknowledged.
func (s *Spool) create(seq uint64) (*file, error) {
	path := filepath.Join(s.cfg.Dir, fileName(seq))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("spool: create %s: %w", path, err)
	}
	if err := syncPath(s.cfg.Dir); err != nil {
		f.Close()
		return nil, err
	}
	s.mu.Lock()
	s.files[seq] = &fileInfo{}
	s.current = seq
	s.mu.Unlock()
	return &file{seq: seq, f: f}, nil
}

// writer owns the open file. It group-commits: every batch waiting when it
// wakes is written, then one fsync covers them all, then each is answered.
func (s *Spool) writer(w *file) {
	defer close(s.done)
	defer func() {
		if w != nil {
			w.f.Close()
		}
	}()
	var batch []*appendReq
	for {
		batch = batch[:0]
		select {
		case r := <-s.reqs:
			batch = append(batch, r)
		more:
			for len(batch) < 4096 {
				select {
				case r := <-s.reqs:
					batch = append(batch, r)
				default:
					break more
				}
			}
		case c := <-s.ctl:
			var err error
			w, err = c.fn(w)
			c.done <- err
			continue
		case <-s.quit:
			return
		}
		w = s.commit(w, batch)
	}
}

// commit writes a batch and fsyncs once. An append that would pass MaxBytes
// is refused alone; a write or fsync error fails every append of the batch
// that was not yet refused.
func (s *Spool) commit(w *file, batch []*appendReq) *file {
	var written []*appendReq
	var werr error
	for _, r := range batch {
		if !r.force && s.bytes.Load()+int64(len(r.buf)) > s.cfg.MaxBytes {
			r.done <- ErrFull
			continue
		}
		if w.size > 0 && w.size+int64(len(r.buf)) > s.cfg.FileBytes {
			if err := w.f.Sync(); err != nil {
				werr = err
				written = append(written, r)
				continue
			}
			next, err := s.roll(w)
			if err != nil {
				werr = err
				written = append(written, r)
				continue
			}
			w = next
		}
		if werr == nil {
			if _, err := w.f.Write(r.buf); err != nil {
				werr = fmt.Errorf("spool: write %s: %w", fileName(w.seq), err)
			}
		}
		written = append(written, r)
		if werr == nil {
			w.size += int64(len(r.buf))
			s.account(w.seq, int64(r.n), int64(len(r.buf)))
		}
	}
	if werr == nil && len(written) > 0 {
		if err := w.f.Sync(); err != nil {
			werr = fmt.Errorf("spool: fsync %s: %w", fileName(w.seq), err)
		}
	}
	for _, r := range written {
		r.done <- werr
	}
	if werr != nil {
		// The file may end in a partial record now: continue in a new one,
		// so later records never sit behind unreadable bytes.
		if next, err := s.roll(w); err == nil {
			w = next
		}
	}
	return w
}

// roll closes w and starts the next file.
func (s *Spool) roll(w *file) (*file, error) {
	next, err := s.create(w.seq + 1)
	if err != nil {
		return w, err
	}
	w.f.Close()
	return next, nil
}

func (s *Spool) account(seq uint64, records, bytes int64) {
	s.mu.Lock()
	if fi := s.files[seq]; fi != nil {
		fi.records += records
		fi.bytes += bytes
	}
	s.mu.Unlock()
	s.records.Add(records)
	s.bytes.Add(bytes)
}
