package segment_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/queenbridge/queenbridge/segment"
)

func sampleFrames(n, payloadSize int) []segment.Frame {
	frames := make([]segment.Frame, n)
	for i := range frames {
		frames[i] = segment.Frame{
			TransactionID: fmt.Sprintf("tx-%d", i),
			TraceID:       strings.Repeat("t", i%3),
			Flags:         uint8(i % 2),
			Payload:       []byte(fmt.Sprintf(`{"n": %d, "pad": "%s"}`, i, strings.Repeat("x", payloadSize))),
		}
		frames[i].ID[0], frames[i].ID[15] = byte(i), byte(i>>8)
	}
	return frames
}

// checkUnpacked fails unless blob holds exactly the frames want, read by
// UnpackAll and frame by frame by Unpack; FlagNATS is expected where a
// frame has a subject or header.
func checkUnpacked(t *testing.T, blob []byte, want []segment.Frame) {
	t.Helper()
	all, err := segment.UnpackAll(blob)
	if err != nil || len(all) != len(want) {
		t.Fatalf("UnpackAll: %d frames (%v), want %d", len(all), err, len(want))
	}
	for k, w := range want {
		one, err := segment.Unpack(blob, k) // skips the frames before k
		if err != nil {
			t.Fatalf("Unpack(%d): %v", k, err)
		}
		flags := w.Flags &^ segment.FlagNATS
		if w.HasNATS() {
			flags |= segment.FlagNATS
		}
		for _, got := range []segment.Frame{one, all[k]} {
			if got.ID != w.ID || got.TransactionID != w.TransactionID || got.TraceID != w.TraceID || got.Flags != flags ||
				!bytes.Equal(got.Payload, w.Payload) || got.Subject != w.Subject || !bytes.Equal(got.Header, w.Header) ||
				(got.Header == nil) != (len(w.Header) == 0) {
				t.Fatalf("frame %d: got %+v, want %+v with flags %08b", k, got, w, flags)
			}
		}
	}
}

func TestPackUnpackRoundTrip(t *testing.T) {
	cases := []struct {
		name   string
		frames []segment.Frame
	}{
		{"one empty payload", []segment.Frame{{TransactionID: "a"}}},
		{"small incompressible", []segment.Frame{{TransactionID: "x", Payload: []byte{0x7b, 0xff, 0x00, 0x10}}}},
		{"hundred compressible", sampleFrames(100, 200)},
		{"unicode and odd spacing", []segment.Frame{{TransactionID: "ü", TraceID: "trace", Payload: []byte(" { \"a\" :\t\"\\u00e9\" , \"n\":12345678901234567890 } ")}}},
		{"one MiB payload", []segment.Frame{{TransactionID: "big", Payload: bytes.Repeat([]byte("ab"), 1<<19)}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			blob := segment.Pack([]byte("prefix"), tc.frames)
			if !bytes.HasPrefix(blob, []byte("prefix")) {
				t.Fatal("Pack must append to dst")
			}
			blob = blob[len("prefix"):]
			n, err := segment.Count(blob)
			if err != nil || n != len(tc.frames) {
				t.Fatalf("Count = %d, %v; want %d", n, err, len(tc.frames))
			}
			checkUnpacked(t, blob, tc.frames)
			if _, err := segment.Unpack(blob, len(tc.frames)); err == nil {
				t.Fatal("Unpack past the last frame must fail")
			}
		})
	}
}

func TestPackCompressesRepetitivePayloads(t *testing.T) {
	frames := sampleFrames(100, 200)
	raw := 0
	for _, f := range frames {
		raw += len(f.Payload)
	}
	if blob := segment.Pack(nil, frames); len(blob) >= raw/2 {
		t.Fatalf("blob of %d bytes for %d payload bytes: not compressed", len(blob), raw)
	}
}

func TestHashBlobStride(t *testing.T) {
	frames := sampleFrames(7, 1)
	hashes := segment.AppendHashes(nil, frames)
	if len(hashes) != 7*segment.HashSize {
		t.Fatalf("hash blob %d bytes, want %d", len(hashes), 7*segment.HashSize)
	}
	for k, f := range frames {
		h := segment.Hash(f.TransactionID)
		if !bytes.Equal(hashes[k*16:k*16+16], h[:]) {
			t.Fatalf("hash %d not at position %d", k, k*16)
		}
	}
	if segment.Hash("a") == segment.Hash("b") {
		t.Fatal("different transactionIds must hash apart")
	}
}

func TestUnpackRejectsCorruptBlobs(t *testing.T) {
	good := segment.Pack(nil, sampleFrames(3, 5))
	raw := segment.Pack(nil, []segment.Frame{{TransactionID: "x", Payload: []byte{1}}})
	cases := map[string][]byte{
		"empty":          nil,
		"header only":    {segment.FormatV1},
		"bad version":    append([]byte{9}, good[1:]...),
		"bad codec":      {segment.FormatV1, 7, 0},
		"truncated zstd": good[:len(good)-3],
		"truncated raw":  raw[:len(raw)-1],
		"count too big":  {segment.FormatV1, 0, 0xff, 0x01},
	}
	for name, blob := range cases {
		if _, err := segment.UnpackAll(blob); !errors.Is(err, segment.ErrCorrupt) {
			t.Errorf("%s: UnpackAll err = %v, want ErrCorrupt", name, err)
		}
	}
}

// BenchmarkPack packs Queen pushes, and JetStream publishes (nats=true:
// each frame with a subject and a header block holding its Nats-Msg-Id).
func BenchmarkPack(b *testing.B) {
	for _, c := range []struct {
		n    int
		nats bool
	}{{1, false}, {10, false}, {100, false}, {1, true}, {10, true}, {100, true}} {
		frames := sampleFrames(c.n, 200)
		size := 0
		for i := range frames {
			if c.nats {
				frames[i].Subject = fmt.Sprintf("orders.eu.%d", i%16)
				frames[i].Header = []byte("NATS/1.0\r\nNats-Msg-Id: " + frames[i].TransactionID + "\r\n\r\n")
			}
			size += len(frames[i].Payload)
		}
		b.Run(fmt.Sprintf("frames=%d/nats=%v", c.n, c.nats), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			buf := make([]byte, 0, 64<<10)
			for i := 0; i < b.N; i++ {
				buf = segment.Pack(buf[:0], frames)
				buf = segment.AppendHashes(buf, frames)
			}
		})
	}
}

// Segments under 4 KiB packed are stored raw (codec 0), larger ones
// compressed (codec 1); both read back exactly.
func TestSmallSegmentsStayRaw(t *testing.T) {
	for _, c := range []struct {
		frames int
		codec  byte
	}{{1, 0}, {8, 0}, {80, 1}} {
		frames := make([]segment.Frame, c.frames)
		for i := range frames {
			frames[i] = segment.Frame{TransactionID: fmt.Sprint("tx-", i), Payload: []byte(fmt.Sprintf(`{"order":%d,"total":%d.50,"currency":"EUR","customer":"c-%06d"}`, i, i*7, i*31))}
		}
		blob := segment.Pack(nil, frames)
		if blob[1] != c.codec {
			t.Fatalf("%d frames (%d bytes stored): codec %d, want %d", c.frames, len(blob), blob[1], c.codec)
		}
		back, err := segment.UnpackAll(blob)
		if err != nil || len(back) != c.frames || string(back[c.frames-1].Payload) != string(frames[c.frames-1].Payload) {
			t.Fatalf("%d frames: read back %d, %v", c.frames, len(back), err)
		}
	}
}

// natsFrames are JetStream publishes (a subject and a header block) mixed
// with a Queen push (neither).
func natsFrames() []segment.Frame {
	return []segment.Frame{
		{TransactionID: "m-1", Subject: "orders.eu.42", Header: []byte("NATS/1.0\r\nNats-Msg-Id: m-1\r\nX-Trace: abc\r\n\r\n"), Payload: []byte(`{"n":1}`)},
		{TransactionID: "q-2", Payload: []byte(`{"n":2}`), Flags: segment.FlagBase64},
		{TransactionID: "m-3", Subject: "orders.us.7", Payload: []byte(`{"n":3}`)},
		{TransactionID: "m-4", Header: []byte("NATS/1.0\r\nA: b\r\n\r\n"), Payload: nil, Flags: segment.FlagEncrypted | segment.FlagKeyed},
	}
}

func TestFramesCarryTheirNATSSubjectAndHeader(t *testing.T) {
	frames := natsFrames()
	for _, pad := range []int{0, 200} { // raw and zstd
		in := append([]segment.Frame(nil), frames...)
		for i := 0; i < pad; i++ {
			in = append(in, segment.Frame{TransactionID: fmt.Sprint("pad-", i), Subject: "orders.pad", Payload: []byte(`{"order":"padding padding padding"}`)})
		}
		checkUnpacked(t, segment.Pack(nil, in), in)
	}
	// The subject and header are no part of the deduplication identity.
	a, b := frames[0], frames[0]
	b.Subject, b.Header = "other.subject", nil
	if !bytes.Equal(segment.AppendHashes(nil, []segment.Frame{a}), segment.AppendHashes(nil, []segment.Frame{b})) {
		t.Fatal("the hash of a frame depends on its subject or header")
	}
}

// A frame whose flags claim NATS fields that are not there is corrupt.
func TestUnpackRejectsATruncatedNATSFrame(t *testing.T) {
	raw := segment.Pack(nil, []segment.Frame{{TransactionID: "x", Payload: []byte("1")}})
	raw[3] |= segment.FlagNATS // the first frame's flags, after format, codec and count
	if _, err := segment.UnpackAll(raw); !errors.Is(err, segment.ErrCorrupt) {
		t.Fatalf("UnpackAll: %v, want ErrCorrupt", err)
	}
	if _, err := segment.Unpack(raw, 0); !errors.Is(err, segment.ErrCorrupt) {
		t.Fatalf("Unpack: %v, want ErrCorrupt", err)
	}
}
