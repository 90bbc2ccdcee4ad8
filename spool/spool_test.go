package spool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func rec(tx string) Record {
	return Record{Tenant: [16]byte{1}, Queue: "q", Partition: "p", MessageID: [16]byte{2}, TransactionID: tx,
		TraceID: "tr", Flags: 1, Payload: []byte(`{"tx":"` + tx + `"}`), SpooledAt: time.Unix(1700000000, 5)}
}

// natsRec is a spooled JetStream publish: rec with a subject and header.
func natsRec(tx string) Record {
	r := rec(tx)
	r.Subject, r.Header = "orders.eu."+tx, []byte("NATS/1.0\r\nNats-Msg-Id: "+tx+"\r\n\r\n")
	return r
}

func open(t *testing.T, dir string, tune func(*Config)) *Spool {
	t.Helper()
	cfg := Config{Dir: dir}
	if tune != nil {
		tune(&cfg)
	}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// drainAll replays everything and returns the records in replay order.
func drainAll(t *testing.T, s *Spool) []Record {
	t.Helper()
	var got []Record
	if _, err := s.Drain(context.Background(), func(_ context.Context, recs []Record) ([]Record, error) {
		got = append(got, recs...)
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestConcurrentAppendsSurviveReopenInOrder(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, func(c *Config) { c.FileBytes = 16 << 10 }) // several files
	const writers, each = 8, 150
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				recs := []Record{rec(fmt.Sprintf("%d-%d-a", w, i)), rec(fmt.Sprintf("%d-%d-b", w, i))}
				if err := s.Append(context.Background(), recs); err != nil {
					t.Errorf("append: %v", err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	if st := s.Stats(); st.Records != writers*each*2 || st.Files < 2 {
		t.Fatalf("stats %+v", st)
	}
	s.Close()

	s2 := open(t, dir, nil)
	if st, err := s2.Check(); err != nil || st.Records != writers*each*2 {
		t.Fatalf("check: %+v %v", st, err)
	}
	got := drainAll(t, s2)
	next := make([]int, writers)
	for _, r := range got {
		var w, i int
		var half string
		fmt.Sscanf(r.TransactionID, "%d-%d-%s", &w, &i, &half)
		want := fmt.Sprintf("%d-%d-%s", w, next[w]/2, map[int]string{0: "a", 1: "b"}[next[w]%2])
		if r.TransactionID != want {
			t.Fatalf("writer %d: got %s, want %s", w, r.TransactionID, want)
		}
		next[w]++
		if r.Queue != "q" || r.Flags != 1 || r.TraceID != "tr" || r.SpooledAt.UnixNano() != 1700000000_000000005 || string(r.Payload) != `{"tx":"`+r.TransactionID+`"}` {
			t.Fatalf("record changed: %+v", r)
		}
	}
	for w, n := range next {
		if n != each*2 {
			t.Fatalf("writer %d: %d records back, want %d", w, n, each*2)
		}
	}
	if st := s2.Stats(); st.Records != 0 || st.Bytes != 0 {
		t.Fatalf("after drain: %+v", st)
	}
}

// A file cut at every byte offset inside its last record reopens with every
// earlier record, and takes new appends after the cut.
func TestTornTailIsCutAtTheLastWholeRecord(t *testing.T) {
	src := t.TempDir()
	s := open(t, src, nil)
	for i := 0; i < 3; i++ {
		if err := s.Append(context.Background(), []Record{rec(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	seqs, _ := (&Spool{cfg: Config{Dir: src}}).list()
	name := fileName(seqs[0])
	data, err := os.ReadFile(filepath.Join(src, name))
	if err != nil {
		t.Fatal(err)
	}
	last := len(appendRecord(nil, ptr(rec("2"))))
	for cut := len(data) - last; cut < len(data); cut++ {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), data[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		s := open(t, dir, nil)
		if st := s.Stats(); st.Records != 2 {
			t.Fatalf("cut at %d: %d records, want 2", cut, st.Records)
		}
		if err := s.Append(context.Background(), []Record{rec("after")}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Check(); err != nil {
			t.Fatalf("cut at %d: check after repair: %v", cut, err)
		}
		got := drainAll(t, s)
		if len(got) != 3 || got[0].TransactionID != "0" || got[1].TransactionID != "1" || got[2].TransactionID != "after" {
			t.Fatalf("cut at %d: replayed %d records", cut, len(got))
		}
		s.Close()
	}
}

func ptr(r Record) *Record { return &r }

func TestCapFailsWithSentinelAndWritesNothing(t *testing.T) {
	s := open(t, t.TempDir(), func(c *Config) { c.MaxBytes = 1000 })
	small := []Record{rec("a")}
	if err := s.Append(context.Background(), small); err != nil {
		t.Fatal(err)
	}
	before := s.Stats()
	big := rec("b")
	big.Payload = make([]byte, 2000)
	if err := s.Append(context.Background(), []Record{big}); !errors.Is(err, ErrFull) {
		t.Fatalf("want ErrFull, got %v", err)
	}
	if after := s.Stats(); after != before {
		t.Fatalf("a refused append changed the spool: %+v -> %+v", before, after)
	}
}

func TestDrainKeepsWhatReplayKeepsAndStopsOnError(t *testing.T) {
	s := open(t, t.TempDir(), nil)
	for i := 0; i < 10; i++ {
		if err := s.Append(context.Background(), []Record{rec(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	boom := errors.New("database down")
	if _, err := s.Drain(context.Background(), func(context.Context, []Record) ([]Record, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("drain error: %v", err)
	}
	if st := s.Stats(); st.Records != 10 {
		t.Fatalf("a failed replay lost records: %+v", st)
	}
	n, err := s.Drain(context.Background(), func(_ context.Context, recs []Record) ([]Record, error) {
		var keep []Record
		for _, r := range recs {
			if r.TransactionID == "3" || r.TransactionID == "7" {
				keep = append(keep, r)
			}
		}
		return keep, nil
	})
	if err != nil || n != 8 {
		t.Fatalf("drained %d (%v), want 8", n, err)
	}
	got := drainAll(t, s)
	if len(got) != 2 || got[0].TransactionID != "3" || got[1].TransactionID != "7" {
		t.Fatalf("kept records replayed: %v", got)
	}
}

// A spooled JetStream publish keeps its subject and header; a record
// without them is written in the first version, which every bridge reads.
func TestRecordsKeepNATSSubjectAndHeader(t *testing.T) {
	for _, r := range []Record{rec("plain"), natsRec("js")} {
		b := appendRecord(nil, &r)
		wantVersion := byte(recordVersion)
		if r.Subject != "" {
			wantVersion = recordNATS
		}
		if b[headerSize] != wantVersion {
			t.Fatalf("%s: version %d, want %d", r.TransactionID, b[headerSize], wantVersion)
		}
		got, n, err := readRecord(b)
		if err != nil || n != len(b) {
			t.Fatalf("%s: %v (%d of %d bytes)", r.TransactionID, err, n, len(b))
		}
		if got.Subject != r.Subject || !bytes.Equal(got.Header, r.Header) || (got.Header == nil) != (r.Header == nil) ||
			got.TransactionID != r.TransactionID || !bytes.Equal(got.Payload, r.Payload) {
			t.Fatalf("%s: read back %+v, want %+v", r.TransactionID, got, r)
		}
	}
}
