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
	f.Fuzz(func(t *testing.T, blob []byte, k int) {
		frames, err := segment.UnpackAll(blob)
		one, errOne := segment.Unpack(blob, k)
		if err != nil {
			return
		}
		if k >= 0 && k < len(frames) {
			if errOne != nil || one.TransactionID != frames[k].TransactionID || !bytes.Equal(one.Payload, frames[k].Payload) {
				t.Fatalf("Unpack(%d) disagrees with UnpackAll: %v", k, errOne)
			}
		}
		again, err := segment.UnpackAll(segment.Pack(nil, frames))
		if err != nil || len(again) != len(frames) {
			t.Fatalf("repack: %v", err)
		}
		for i := range frames {
			if again[i].ID != frames[i].ID || again[i].TraceID != frames[i].TraceID || !bytes.Equal(again[i].Payload, frames[i].Payload) {
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
		if out[0].TransactionID != tx || out[0].TraceID != trace || out[0].Flags != flags || !bytes.Equal(out[0].Payload, payload) {
			t.Fatalf("round trip changed the frame")
		}
	})
}
