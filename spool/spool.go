package spool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Config says where the spool lives and how large it may grow.
type Config struct {
	// Dir holds the spool files; created when missing. Required.
	Dir string
	// MaxBytes caps the spool's size on disk (QUEEN_SPOOL_MAX_BYTES); an
	// append past it fails with ErrFull. Default 1 GiB.
	MaxBytes int64
	// FileBytes is the size at which the current file is rolled. Default 64 MiB.
	FileBytes int64
}

// Spool is an open spool directory.
type Spool struct {
	cfg  Config
	reqs chan *appendReq
	ctl  chan ctlReq
	quit chan struct{}
	done chan struct{}

	// mu guards files: the writer goroutine adds to the current file's entry
	// and creates new ones, Drain removes sealed ones, Stats reads them.
	mu      sync.Mutex
	files   map[uint64]*fileInfo
	current uint64 // sequence of the file being appended to

	records atomic.Int64
	bytes   atomic.Int64
	skipped atomic.Int64 // damaged bytes passed over by scans at Open
	closed  atomic.Bool
}

type fileInfo struct {
	records int64
	bytes   int64
}

type appendReq struct {
	buf   []byte
	n     int
	force bool
	done  chan error
}

// ctlReq runs fn on the writer goroutine, which owns the open file.
type ctlReq struct {
	fn   func(*file) (*file, error)
	done chan error
}

const filePrefix, fileSuffix = "spool-", ".log"

func fileName(seq uint64) string { return fmt.Sprintf("%s%020d%s", filePrefix, seq, fileSuffix) }

// Open opens (creating) the spool directory, cuts a torn tail off the newest
// file, and starts the writer on a new file.
func Open(cfg Config) (*Spool, error) {
	if cfg.Dir == "" {
		return nil, errors.New("spool: Dir is required")
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = 1 << 30
	}
	if cfg.FileBytes == 0 {
		cfg.FileBytes = 64 << 20
	}
	if cfg.MaxBytes < 0 || cfg.FileBytes < 0 {
		return nil, errors.New("spool: sizes must be positive")
	}
	// Spooled payloads are plaintext for unencrypted queues: the directory
	// and its files are the service user's alone, also when an older
	// version made them readable.
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("spool: create %s: %w", cfg.Dir, err)
	}
	if err := os.Chmod(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("spool: chmod %s: %w", cfg.Dir, err)
	}
	s := &Spool{cfg: cfg, reqs: make(chan *appendReq, 1024), ctl: make(chan ctlReq), quit: make(chan struct{}),
		done: make(chan struct{}), files: map[uint64]*fileInfo{}}
	seqs, err := s.list()
	if err != nil {
		return nil, err
	}
	for _, seq := range seqs {
		info, err := s.scan(seq)
		if err != nil {
			return nil, err
		}
		s.files[seq] = info
		s.records.Add(info.records)
		s.bytes.Add(info.bytes)
		s.current = seq
	}
	w, err := s.create(s.current + 1)
	if err != nil {
		return nil, err
	}
	go s.writer(w)
	return s, nil
}

// list returns the sequences of the spool files, ascending.
func (s *Spool) list() ([]uint64, error) {
	entries, err := os.ReadDir(s.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("spool: list %s: %w", s.cfg.Dir, err)
	}
	var seqs []uint64
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, filePrefix) || !strings.HasSuffix(name, fileSuffix) {
			continue
		}
		seq, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, filePrefix), fileSuffix), 10, 64)
		if err != nil {
			continue
		}
		seqs = append(seqs, seq)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	return seqs, nil
}

// scan counts a file's whole records, skipping damaged ones in the middle
// (counted in SkippedBytes), and cuts the file after the last whole one: a
// torn tail (a crash mid-append) on the newest file, or what follows a
// failed write on an older one (the writer rolls after a write error).
func (s *Spool) scan(seq uint64) (*fileInfo, error) {
	path := filepath.Join(s.cfg.Dir, fileName(seq))
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, fmt.Errorf("spool: chmod %s: %w", path, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("spool: read %s: %w", path, err)
	}
	info := &fileInfo{}
	end, skipped := walk(data, func(Record) { info.records++ })
	if end < len(data) {
		if err := os.Truncate(path, int64(end)); err != nil {
			return nil, fmt.Errorf("spool: cut torn tail of %s at %d: %w", path, end, err)
		}
		if err := syncPath(path); err != nil {
			return nil, err
		}
	}
	s.skipped.Add(int64(skipped))
	info.bytes = int64(end)
	return info, nil
}

// Append writes recs and returns after they are fsynced. It fails with
// ErrFull when they would take the spool past MaxBytes; nothing of recs is
// then written.
func (s *Spool) Append(ctx context.Context, recs []Record) error {
	return s.append(ctx, recs, false)
}

// append is Append; force skips the size cap (records a drain keeps are
// already counted in the file being drained).
func (s *Spool) append(ctx context.Context, recs []Record, force bool) error {
	if len(recs) == 0 {
		return nil
	}
	size := 0
	for i := range recs {
		size += headerSize + recs[i].size()
	}
	buf := make([]byte, 0, size)
	for i := range recs {
		buf = appendRecord(buf, &recs[i])
	}
	req := &appendReq{buf: buf, n: len(recs), force: force, done: make(chan error, 1)}
	select {
	case s.reqs <- req:
	case <-s.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.done:
		return err
	case <-s.done:
		return ErrClosed
	}
}

// Stats is what the spool holds.
type Stats struct {
	Records int64
	Bytes   int64
	Files   int
	// SkippedBytes were damaged records in the middle of files, passed over
	// when Open read the spool: what followed them is kept and replayed.
	SkippedBytes int64
}

// MaxBytes is the size the spool may reach.
func (s *Spool) MaxBytes() int64 { return s.cfg.MaxBytes }

// Stats returns the records and bytes pending in the spool.
func (s *Spool) Stats() Stats {
	s.mu.Lock()
	files := len(s.files)
	s.mu.Unlock()
	return Stats{Records: s.records.Load(), Bytes: s.bytes.Load(), Files: files, SkippedBytes: s.skipped.Load()}
}

// Check reads every file and verifies every record. Tests run it.
func (s *Spool) Check() (Stats, error) {
	seqs, err := s.list()
	if err != nil {
		return Stats{}, err
	}
	var st Stats
	for _, seq := range seqs {
		data, err := os.ReadFile(filepath.Join(s.cfg.Dir, fileName(seq)))
		if err != nil {
			return st, err
		}
		for off := 0; off < len(data); {
			_, n, err := readRecord(data[off:])
			if err != nil {
				return st, fmt.Errorf("spool: %s at byte %d: %w", fileName(seq), off, err)
			}
			off += n
			st.Records++
		}
		st.Bytes += int64(len(data))
		st.Files++
	}
	return st, nil
}

// Close stops the writer; pending appends fail with ErrClosed. Idempotent.
func (s *Spool) Close() error {
	if s.closed.CompareAndSwap(false, true) {
		close(s.quit)
	}
	<-s.done
	return nil
}

func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("spool: open %s for fsync: %w", path, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("spool: fsync %s: %w", path, err)
	}
	return nil
}
