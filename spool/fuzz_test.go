package spool

import (
	"bytes"
	"testing"
)

// FuzzReadRecord: arbitrary bytes never panic the decoder, and whatever it
// accepts encodes back to the same bytes.
func FuzzReadRecord(f *testing.F) {
	f.Add(appendRecord(nil, ptr(rec("seed"))))
	f.Add(appendRecord(nil, &Record{}))
	f.Add(appendRecord(nil, ptr(natsRec("seed"))))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, n, err := readRecord(data)
		if err != nil {
			return
		}
		again := appendRecord(nil, &r)
		if bytes.HasPrefix(data, magic[:]) && !bytes.Equal(again, data[:n]) {
			t.Fatalf("re-encoding differs:\n%x\n%x", again, data[:n])
		}
		if !bytes.HasPrefix(data, magic[:]) && !bytes.Equal(again[headerSize:], data[legacyHeaderSize:n]) {
			t.Fatalf("re-encoding a record without magic changes its body:\n%x\n%x", again[headerSize:], data[legacyHeaderSize:n])
		}
	})
}

// FuzzDecodeRecord goes past the CRC: arbitrary record bodies never panic
// the decoder, and what it accepts survives a round trip.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(appendRecord(nil, ptr(rec("seed")))[headerSize:])
	f.Add(appendRecord(nil, &Record{})[headerSize:])
	f.Add(appendRecord(nil, ptr(natsRec("seed")))[headerSize:])
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := decodeRecord(body)
		if err != nil {
			return
		}
		back, err := decodeRecord(appendRecord(nil, &r)[headerSize:])
		if err != nil || back.TransactionID != r.TransactionID || back.Queue != r.Queue || back.Partition != r.Partition ||
			back.TraceID != r.TraceID || back.Flags != r.Flags || back.Tenant != r.Tenant || back.MessageID != r.MessageID ||
			!back.SpooledAt.Equal(r.SpooledAt) || !bytes.Equal(back.Payload, r.Payload) ||
			back.Subject != r.Subject || !bytes.Equal(back.Header, r.Header) {
			t.Fatalf("round trip changed the record (%v)", err)
		}
	})
}
