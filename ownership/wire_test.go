package ownership

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/segment"
)

func sampleGroups() []Group {
	return []Group{
		{Queue: "orders", Partition: "p1", Frames: []segment.Frame{
			{ID: [16]byte{1}, TransactionID: "t1", TraceID: "tr", Payload: []byte(`{"a":1}`)},
			{ID: [16]byte{2}, TransactionID: "t2", Flags: segment.FlagEncrypted | segment.FlagKeyed, Payload: []byte{0, 1, 2}},
		}},
		{Queue: "orders", Partition: "p2", Frames: []segment.Frame{{ID: [16]byte{3}, TransactionID: "t3", Payload: []byte{}}}},
	}
}

// natsGroups hold JetStream publishes: a subject and a header block.
func natsGroups() []Group {
	g := sampleGroups()
	g[0].Frames = append(g[0].Frames,
		segment.Frame{ID: [16]byte{4}, TransactionID: "m4", Payload: []byte(`{}`), Subject: "orders.eu.4", Header: []byte("NATS/1.0\r\nNats-Msg-Id: m4\r\n\r\n")},
		segment.Frame{ID: [16]byte{5}, TransactionID: "m5", Payload: []byte(`1`), Subject: "orders.eu.5", Flags: segment.FlagBase64})
	return g
}

// A forward keeps a JetStream publish's subject and header; a request
// without them is the first version's bytes, which bridges of either age
// read, and one with them is a version an older bridge refuses (so the
// sender writes it itself) rather than misreads.
func TestForwardRequestCarriesNATSSubjectAndHeader(t *testing.T) {
	groups := natsGroups()
	b := appendRequest(nil, [16]byte{1}, groups)
	if b[0] != wireNATS {
		t.Fatalf("version %d, want %d", b[0], wireNATS)
	}
	_, got, err := decodeRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, groups) {
		t.Fatalf("decoded %+v, want %+v", got, groups)
	}
	if plain := appendRequest(nil, [16]byte{1}, sampleGroups()); plain[0] != wireVersion {
		t.Fatalf("a request without NATS fields is version %d, want %d", plain[0], wireVersion)
	}
	for cut := 0; cut < len(b); cut++ {
		if _, _, err := decodeRequest(b[:cut]); err == nil {
			t.Fatalf("a request cut at %d of %d bytes decoded", cut, len(b))
		}
	}
}

func TestForwardRequestRoundTrips(t *testing.T) {
	groups := sampleGroups()
	tenant := [16]byte{9, 8, 7}
	b := appendRequest(nil, tenant, groups)
	gotTenant, got, err := decodeRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if gotTenant != tenant || !reflect.DeepEqual(got, groups) {
		t.Fatalf("decoded %x %+v, want %x %+v", gotTenant, got, tenant, groups)
	}
	for cut := 0; cut < len(b); cut++ {
		if _, _, err := decodeRequest(b[:cut]); err == nil {
			t.Fatalf("a request cut at %d of %d bytes decoded", cut, len(b))
		}
	}
	if _, _, err := decodeRequest(append(b, 0)); err == nil {
		t.Fatal("trailing bytes accepted")
	}
}

func TestForwardAnswerRoundTrips(t *testing.T) {
	groups := sampleGroups()
	at := time.UnixMicro(1_700_000_000_123_456).UTC()
	answers := []Answer{
		{Verdicts: []fusion.Verdict{
			{Status: fusion.Queued, PartitionID: 7, Offset: 41, CreatedAt: at, MessageID: [16]byte{1}},
			{Status: fusion.Error, Err: errors.New("bundle failed")},
		}},
		{Refused: true},
	}
	got, err := decodeAnswer(appendAnswer(nil, answers), groups)
	if err != nil {
		t.Fatal(err)
	}
	if got[1].Refused != true || got[0].Verdicts[0] != answers[0].Verdicts[0] || got[0].Verdicts[1].Err.Error() != "bundle failed" {
		t.Fatalf("decoded %+v", got)
	}
	// An answer that does not fit what was sent is an error, not verdicts.
	if _, err := decodeAnswer(appendAnswer(nil, answers[:1]), groups); err == nil {
		t.Fatal("an answer with fewer groups decoded")
	}
	short := []Answer{{Verdicts: answers[0].Verdicts[:1]}, {Refused: true}}
	if _, err := decodeAnswer(appendAnswer(nil, short), groups); err == nil {
		t.Fatal("an answer with fewer verdicts than frames decoded")
	}
	if _, err := decodeAnswer([]byte{0}, groups); err == nil {
		t.Fatal("a malformed answer decoded")
	}
}

// FuzzDecodeRequest: whatever arrives on a forward subject, decoding never
// panics, and what decodes survives encoding and decoding again.
func FuzzDecodeRequest(f *testing.F) {
	f.Add(appendRequest(nil, [16]byte{1}, sampleGroups()))
	f.Add(appendRequest(nil, [16]byte{1}, natsGroups()))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		tenant, groups, err := decodeRequest(b)
		if err != nil {
			return
		}
		tenant2, groups2, err := decodeRequest(appendRequest(nil, tenant, groups))
		if err != nil || tenant2 != tenant || !reflect.DeepEqual(groups2, groups) {
			t.Fatalf("re-decoded %x %+v (%v), want %x %+v", tenant2, groups2, err, tenant, groups)
		}
	})
}
