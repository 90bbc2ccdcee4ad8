package jetstream

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

func TestAckSubjectRoundTrip(t *testing.T) {
	refs := []AckRef{
		{PartitionID: 7, Stream: "ORDERS", Consumer: "workers", Delivered: 1, Offset: 105, ConsumerSeq: 9, Timestamp: 1764669600123456789, Pending: 12, Epoch: 3},
		{PartitionID: 1 << 40, Stream: "A-b_c", Consumer: "c", Delivered: 1 << 20, Offset: 0, ConsumerSeq: 0, Timestamp: 0, Pending: 0, Epoch: 0},
		{PartitionID: math.MaxInt64, Stream: "S", Consumer: "C", Delivered: math.MaxInt64, Offset: math.MaxInt64, ConsumerSeq: math.MaxInt64, Timestamp: math.MaxInt64, Pending: math.MaxInt64, Epoch: math.MaxInt64},
	}
	for _, want := range refs {
		subject := string(AppendAckSubject(nil, want))
		if n := strings.Count(subject, ".") + 1; n != 12 {
			t.Fatalf("%s has %d tokens, want 12", subject, n)
		}
		got, err := ParseAckSubject(subject)
		if err != nil || got != want {
			t.Fatalf("ParseAckSubject(%s) = %+v, %v; want %+v", subject, got, err, want)
		}
		reply := string(AppendAckReply(nil, want, "orders.eu.42"))
		if reply != subject+"@orders.eu.42" {
			t.Fatalf("AppendAckReply = %s", reply)
		}
	}
}

// nats.go reads the ack subject's metadata as JetStream's: the stream
// sequence is the offset, the domain is empty, and so on.
func TestAckSubjectReadsAsJetStreamMetadata(t *testing.T) {
	ref := AckRef{PartitionID: 7, Stream: "ORDERS", Consumer: "workers", Delivered: 2, Offset: 105, ConsumerSeq: 9, Timestamp: 1764669600123456789, Pending: 12, Epoch: 3}
	// Metadata wants a message bound to a subscription; it reads the reply only.
	m := &nats.Msg{Subject: "orders.eu.42", Reply: string(AppendAckSubject(nil, ref)), Sub: &nats.Subscription{}}
	md, err := m.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	if md.Stream != "ORDERS" || md.Consumer != "workers" || md.NumDelivered != 2 || md.Sequence.Stream != 105 ||
		md.Sequence.Consumer != 9 || md.NumPending != 12 || md.Domain != "" || !md.Timestamp.Equal(time.Unix(0, ref.Timestamp)) {
		t.Fatalf("metadata: %+v", md)
	}
}

func TestParseAckSubjectRefuses(t *testing.T) {
	for _, s := range []string{
		"$JS.ACK.ORDERS.workers.1.105.9.1764669600123456789.12",            // nats-server's 9 tokens
		"$JS.ACK.dom.HASH.ORDERS.workers.1.105.9.1764669600123456789.12.x", // another domain
		"$JS.ACK._.7.ORDERS.workers.1.105.9.1764669600123456789.12",        // 11 tokens
		"$JS.ACK._.7.ORDERS.workers.1.105.9.1764669600123456789.12.3.4",    // 13 tokens
		"$JS.ACK._.x.ORDERS.workers.1.105.9.1764669600123456789.12.3",      // partition id not a number
		"$JS.ACK._.7.ORDERS.workers.1.-5.9.1764669600123456789.12.3",       // negative offset
		"$JS.ACK._.7..workers.1.105.9.1764669600123456789.12.3",            // no stream
		"$JS.ACK._.7.ORDERS..1.105.9.1764669600123456789.12.3",             // no consumer
		"$JS.ACK._.7.ORDERS.workers.1.105.9.9223372036854775808.12.3",      // a timestamp of 2⁶³
		"$JS.ACK._.7.ORDERS.workers.1.105.9.17646696001234567890.12.3",     // 20 digits
		"$JS.ACK._.7.ORDERS.workers.1.105.9.1764669600123456789.12.",       // an empty epoch
		"$JS.ACK._.7.ORDERS.workers.+1.105.9.1764669600123456789.12.3",     // a sign
		"$JS.API.INFO",
	} {
		if _, err := ParseAckSubject(s); !errors.Is(err, ErrAckSubject) {
			t.Errorf("ParseAckSubject(%s) = %v, want ErrAckSubject", s, err)
		}
	}
}

func TestParseAckBody(t *testing.T) {
	cases := []struct {
		body   string
		kind   AckKind
		delay  time.Duration
		reason string
		err    error
	}{
		{"", AckAck, 0, "", nil},
		{"+ACK", AckAck, 0, "", nil},
		{"+OK", AckAck, 0, "", nil},
		{"-NAK", AckNak, 0, "", nil},
		{`-NAK {"delay":300000000}`, AckNak, 300 * time.Millisecond, "", nil}, // nats.go NakWithDelay
		{"-NAK 5s", AckNak, 5 * time.Second, "", nil},
		{"-NAK soon", AckNak, 0, "", nil}, // a bad delay is a plain NAK, as on nats-server
		{`-NAK {"delay":"x"}`, AckNak, 0, "", nil},
		{"+WPI", AckProgress, 0, "", nil},
		{"+TERM", AckTerm, 0, "", nil},
		{"+TERM  bad payload ", AckTerm, 0, "bad payload", nil},
		{"+NXT", AckAck, 0, "", ErrAckNext},
		{`+NXT {"batch":1}`, AckAck, 0, "", ErrAckNext},
		{"+WPI please", AckAck, 0, "", ErrAckBody},
		{"ack", AckAck, 0, "", ErrAckBody},
	}
	for _, c := range cases {
		kind, delay, reason, err := ParseAckBody([]byte(c.body))
		if kind != c.kind || delay != c.delay || reason != c.reason || !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("ParseAckBody(%q) = %v, %v, %q, %v; want %v, %v, %q, %v", c.body, kind, delay, reason, err, c.kind, c.delay, c.reason, c.err)
		}
	}
}

// BenchmarkParseAckSubject reads the ack subject of a delivery, as every
// acknowledgement does.
func BenchmarkParseAckSubject(b *testing.B) {
	subject := string(AppendAckSubject(nil, AckRef{PartitionID: 17, Stream: "ORDERS", Consumer: "workers", Delivered: 1, Offset: 1234567, ConsumerSeq: 7654321, Timestamp: 1764669600123456789, Pending: 4321, Epoch: 1764669000000000000}))
	b.ReportAllocs()
	for range b.N {
		if _, err := ParseAckSubject(subject); err != nil {
			b.Fatal(err)
		}
	}
}

// The one-pass read of a delivery's ack subject agrees with the general
// parse wherever it takes a subject, and leaves to it whatever it refuses.
func FuzzAckFieldsAgreeWithTheGeneralParse(f *testing.F) {
	f.Add("7.ORDERS.workers.1.105.9.1764669600123456789.12.3")
	f.Add("9223372036854775807.S.C.1.2.3.4.5.6")
	f.Add("7.ORDERS.workers.1.105.9.9223372036854775808.12.3")
	f.Add("7..workers.1.105.9.1.12.3")
	f.Add("7.ORDERS.workers.1.105.9.1.12.3.4")
	f.Fuzz(func(t *testing.T, rest string) {
		subject := AckPrefix + "_." + rest
		fast, ok := ackFields(rest)
		general, err := parseAckTokens(subject, rest)
		if ok && (err != nil || fast != general) {
			t.Fatalf("%q: one pass %+v, general %+v, %v", subject, fast, general, err)
		}
		got, gotErr := ParseAckSubject(subject)
		if got != general || (gotErr == nil) != (err == nil) {
			t.Fatalf("%q: ParseAckSubject %+v, %v; general %+v, %v", subject, got, gotErr, general, err)
		}
	})
}
