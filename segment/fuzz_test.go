package segment_test

import (
	"bytes"
	"testing"

	"github.com/queenbridge/queenbridge/segment"
)

// FuzzUnpack feeds arbitrary blobs to the decoder: it must fail cleanly or
// decode frames that pack back to an equivalent blob.
func FuzzUnpack(f *testing.F) {
	f.Add(segment.Pack(nil, sampleFrames(3, 10)), 1)
	f.Add(segment.Pack(nil, []segment.Frame{{TransactionID: "x", Payload: []byte(`"a"`)}}), 0)
	f.Add(segment.Pack(nil, natsFrames()), 1)
	f.Fuzz(func(t *testing.T, blob []byte, k int) {
		frames, err := segment.UnpackAll(blob)
		one, errOne := segment.Unpack(blob, k)
		if err != nil {
			return
		}
		if k >= 0 && k < len(frames) {
			if errOne != nil || one.TransactionID != frames[k].TransactionID || !bytes.Equal(one.Payload, frames[k].Payload) ||
				one.Subject != frames[k].Subject || !bytes.Equal(one.Header, frames[k].Header) {
				t.Fatalf("Unpack(%d) disagrees with UnpackAll: %v", k, errOne)
			}
		}
		again, err := segment.UnpackAll(segment.Pack(nil, frames))
		if err != nil || len(again) != len(frames) {
			t.Fatalf("repack: %v", err)
		}
		for i := range frames {
			if again[i].ID != frames[i].ID || again[i].TraceID != frames[i].TraceID || !bytes.Equal(again[i].Payload, frames[i].Payload) ||
				again[i].Flags != frames[i].Flags || again[i].Subject != frames[i].Subject || !bytes.Equal(again[i].Header, frames[i].Header) {
				t.Fatalf("frame %d changed on repack", i)
			}
		}
	})
}

// FuzzRoundTrip packs arbitrary frame contents and checks they come back.
func FuzzRoundTrip(f *testing.F) {
	f.Add("tx", "trace", []byte(`{"a":1}`), uint8(0))
	f.Add("", "", []byte{}, uint8(1))
	f.Fuzz(func(t *testing.T, tx, trace string, payload []byte, flags uint8) {
		in := []segment.Frame{{TransactionID: tx, TraceID: trace, Payload: payload, Flags: flags}, {TransactionID: tx + "2"}}
		out, err := segment.UnpackAll(segment.Pack(nil, in))
		if err != nil {
			t.Fatal(err)
		}
		// FlagNATS is the codec's: a frame without a subject or header never has it.
		if out[0].TransactionID != tx || out[0].TraceID != trace || out[0].Flags != flags&^segment.FlagNATS || !bytes.Equal(out[0].Payload, payload) {
			t.Fatalf("round trip changed the frame")
		}
	})
}

// FuzzRoundTripNATS packs frames with arbitrary subjects and header blocks
// beside a frame without them: all come back, FlagNATS set exactly on the
// frame that carries them, whatever flags the caller gave.
func FuzzRoundTripNATS(f *testing.F) {
	f.Add("orders.eu.42", []byte("NATS/1.0\r\nNats-Msg-Id: a\r\n\r\n"), []byte(`{"a":1}`), uint8(0))
	f.Add("", []byte{}, []byte{}, uint8(0xff))
	f.Add("s", []byte(nil), []byte("x"), segment.FlagNATS)
	f.Fuzz(func(t *testing.T, subject string, header, payload []byte, flags uint8) {
		in := []segment.Frame{
			{TransactionID: "a", Subject: subject, Header: header, Payload: payload, Flags: flags},
			{TransactionID: "b", Payload: payload, Flags: flags},
		}
		blob := segment.Pack(nil, in)
		out, err := segment.UnpackAll(blob)
		if err != nil {
			t.Fatal(err)
		}
		carries := subject != "" || len(header) > 0
		for k, want := range in {
			one, err := segment.Unpack(blob, k)
			if err != nil {
				t.Fatal(err)
			}
			wantFlags := flags &^ segment.FlagNATS
			if k == 0 && carries {
				wantFlags |= segment.FlagNATS
			}
			for _, got := range []segment.Frame{out[k], one} {
				if got.TransactionID != want.TransactionID || got.Subject != want.Subject || got.Flags != wantFlags ||
					!bytes.Equal(got.Header, want.Header) || (got.Header == nil) != (len(want.Header) == 0) || !bytes.Equal(got.Payload, payload) {
					t.Fatalf("frame %d: got %+v, want %+v with flags %08b", k, got, want, wantFlags)
				}
			}
		}
	})
}
