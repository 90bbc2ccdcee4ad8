package jetstream

import (
	"reflect"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/auth"
)

// The stored header block decodes, as a JetStream client decodes it, to
// the headers the producer sent, and is the same bytes whatever order the
// map gives; what the server added for the accounts mode is not kept.
func TestHeaderBlockIsWhatTheProducerSent(t *testing.T) {
	sent := nats.Header{
		"Nats-Msg-Id": {"order-1"},
		"X-Trace":     {"abc", "def"},
		"a-lower":     {"value with: colon"},
		"Empty":       {""},
	}
	withInfo := nats.Header{auth.RequestInfoHeader: {`{"acc":"TENANT_A"}`}}
	for k, v := range sent {
		withInfo[k] = v
	}
	want := "NATS/1.0\r\nEmpty: \r\nNats-Msg-Id: order-1\r\nX-Trace: abc\r\nX-Trace: def\r\na-lower: value with: colon\r\n\r\n"
	for i := 0; i < 20; i++ { // map order varies between runs of the loop
		for _, h := range []nats.Header{sent, withInfo} {
			b := headerBlock(h)
			if string(b) != want {
				t.Fatalf("block %q, want %q", b, want)
			}
			if len(b) != cap(b) {
				t.Fatalf("block of %d bytes in %d: the size was not exact", len(b), cap(b))
			}
			back, err := nats.DecodeHeadersMsg(b)
			if err != nil || !reflect.DeepEqual(back, sent) {
				t.Fatalf("decodes to %v (%v), want %v", back, err, sent)
			}
		}
	}
}

func TestHeaderBlockOfNoHeadersIsNil(t *testing.T) {
	for _, h := range []nats.Header{nil, {}, {auth.RequestInfoHeader: {"{}"}}, {"X": nil}} {
		if b := headerBlock(h); b != nil {
			t.Fatalf("%v: block %q, want nil", h, b)
		}
	}
	if n := testing.AllocsPerRun(100, func() { headerBlock(nil) }); n != 0 {
		t.Fatalf("a message without headers costs %v allocations", n)
	}
	h := nats.Header{"Nats-Msg-Id": {"x"}, "B": {"y"}}
	if n := testing.AllocsPerRun(100, func() { headerBlock(h) }); n != 1 {
		t.Fatalf("a message with two headers costs %v allocations, want 1 (the block)", n)
	}
}

func BenchmarkHeaderBlock(b *testing.B) {
	h := nats.Header{"Nats-Msg-Id": {"order-000123456"}, "Content-Type": {"application/json"}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		headerBlock(h)
	}
}
