package spool

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
)

// The spool directory and its files are the service user's alone, also
// when an older version left them readable.
func TestSpoolFilesArePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, fileName(1))
	if err := os.WriteFile(old, appendRecord(nil, ptr(rec("old"))), 0o644); err != nil {
		t.Fatal(err)
	}
	s := open(t, dir, nil)
	if err := s.Append(context.Background(), []Record{rec("new")}); err != nil {
		t.Fatal(err)
	}
	mode := func(p string) os.FileMode {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return info.Mode().Perm()
	}
	if m := mode(dir); m != 0o700 {
		t.Fatalf("directory mode %v", m)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 2 {
		t.Fatalf("%d files (%v)", len(entries), err)
	}
	for _, e := range entries {
		if m := mode(filepath.Join(dir, e.Name())); m != 0o600 {
			t.Fatalf("%s mode %v", e.Name(), m)
		}
	}
}

// spoolFile writes records as one spool file and returns each record's
// byte range in it.
func spoolFile(t testing.TB, dir string, txs ...string) (string, [][2]int) {
	t.Helper()
	var data []byte
	var spans [][2]int
	for _, tx := range txs {
		start := len(data)
		data = appendRecord(data, ptr(rec(tx)))
		spans = append(spans, [2]int{start, len(data)})
	}
	path := filepath.Join(dir, fileName(1))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, spans
}

func txids(recs []Record) string {
	var b bytes.Buffer
	for _, r := range recs {
		b.WriteString(r.TransactionID + " ")
	}
	return b.String()
}

// A damaged record in the middle of a file is skipped: every intact record
// after it is kept and replayed once, and the bytes passed over are
// counted. A torn tail is still cut.
func TestDamagedMiddleRecordIsSkipped(t *testing.T) {
	for _, damage := range []struct {
		name string
		at   func(span [2]int) int // byte of record "b" to flip
	}{
		{"body", func(s [2]int) int { return s[0] + headerSize + 20 }},
		{"length", func(s [2]int) int { return s[0] + 5 }},
		{"magic", func(s [2]int) int { return s[0] }},
		{"crc", func(s [2]int) int { return s[0] + 9 }},
	} {
		t.Run(damage.name, func(t *testing.T) {
			dir := t.TempDir()
			path, spans := spoolFile(t, dir, "a", "b", "c", "d")
			data, _ := os.ReadFile(path)
			data[damage.at(spans[1])] ^= 0x5a
			data = append(data, appendRecord(nil, ptr(rec("torn")))[:20]...) // and a torn tail
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			s := open(t, dir, nil)
			st := s.Stats()
			if st.Records != 3 || st.SkippedBytes != int64(spans[1][1]-spans[1][0]) {
				t.Fatalf("records %d, skipped %d bytes; want 3 and %d", st.Records, st.SkippedBytes, spans[1][1]-spans[1][0])
			}
			if got := txids(drainAll(t, s)); got != "a c d " {
				t.Fatalf("replayed %q, want a c d", got)
			}
			if got := txids(drainAll(t, s)); got != "" {
				t.Fatalf("replayed again: %q", got)
			}
		})
	}
}

// Records written before the magic existed (length, CRC, body) still read.
func TestRecordsWithoutMagicStillRead(t *testing.T) {
	dir := t.TempDir()
	var data []byte
	for _, tx := range []string{"x", "y"} {
		body := appendRecord(nil, ptr(rec(tx)))[headerSize:]
		data = binary.LittleEndian.AppendUint32(data, uint32(len(body)))
		data = binary.LittleEndian.AppendUint32(data, crc32.Checksum(body, castagnoli))
		data = append(data, body...)
	}
	if err := os.WriteFile(filepath.Join(dir, fileName(1)), data, 0o600); err != nil {
		t.Fatal(err)
	}
	s := open(t, dir, nil)
	if got := txids(drainAll(t, s)); got != "x y " {
		t.Fatalf("replayed %q", got)
	}
}

// FuzzDamagedFile damages a file of records at a fuzzed place and way:
// walking it never panics, returns only records that were written, and
// returns every record whose bytes the damage did not touch.
func FuzzDamagedFile(f *testing.F) {
	f.Add(uint16(30), uint8(1), uint8(0), uint8(5))
	f.Add(uint16(0), uint8(0xff), uint8(1), uint8(9))
	f.Add(uint16(200), uint8(0), uint8(2), uint8(40))
	f.Fuzz(func(t *testing.T, pos uint16, x, how, n uint8) {
		var data []byte
		var spans [][2]int
		for i := 0; i < 6; i++ {
			start := len(data)
			data = appendRecord(data, ptr(rec(fmt.Sprint("r", i))))
			spans = append(spans, [2]int{start, len(data)})
		}
		p := int(pos) % len(data)
		lo, hi := p, p+1 // the damaged bytes
		switch how % 3 {
		case 0: // flip a byte
			data[p] ^= x | 1
		case 1: // cut n bytes out
			hi = min(p+int(n), len(data))
			data = append(data[:p:p], data[hi:]...)
		default: // write n copies of x over it
			hi = min(p+int(n), len(data))
			for i := p; i < hi; i++ {
				data[i] = x
			}
		}
		got := map[string]bool{}
		walk(data, func(r Record) {
			if r.Queue != "q" || len(r.TransactionID) != 2 || r.TransactionID[0] != 'r' {
				t.Fatalf("a record nobody wrote: %+v", r)
			}
			got[r.TransactionID] = true
		})
		for i, s := range spans {
			if s[1] <= lo || s[0] >= hi { // untouched
				if !got[fmt.Sprint("r", i)] {
					t.Fatalf("damage at [%d, %d) lost untouched record %d at [%d, %d)", lo, hi, i, s[0], s[1])
				}
			}
		}
	})
}
