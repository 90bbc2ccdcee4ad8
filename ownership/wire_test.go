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
