package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/queenbridge/queenbridge/jsonapi"
)

// realAnswer is a pop answer as the bridge writes it (jsonapi's encoder):
// n messages of about 600 bytes, each payload stamped as a producer does.
func realAnswer(n int) []byte {
	out := jsonapi.OpenPop(nil, &jsonapi.PopHead{Queue: "bench.q0", Partition: "p3", PartitionID: 41,
		Lease: "9b2f3c1e-5a7d-4e8f-a1b2-c3d4e5f60718", Group: "g-0", Claimed: 1})
	created := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)
	for k := range n {
		if k > 0 {
			out = append(out, ',')
		}
		m := jsonapi.PoppedMessage{ID: [16]byte{byte(k), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, byte(k >> 8)},
			TransactionID: "run-" + strconv.Itoa(k%7) + "-" + strconv.Itoa(k) + "-0",
			Payload:       fmt.Appendf(nil, `{"t":%d,"data":"%s"}`, created.UnixNano()+int64(k), strings.Repeat("x", 300)),
			CreatedAt:     created, PartitionID: 41 + int64(k%3), Partition: "p" + strconv.Itoa(3+k%3)}
		out = jsonapi.AppendPopped(out, &m, "9b2f3c1e-5a7d-4e8f-a1b2-c3d4e5f60718", "g-0")
	}
	return jsonapi.ClosePop(out)
}

// warmAnswer is what differ's decoder reads first.
var warmAnswer = realAnswer(3)

// referenceDecode is how pop read an answer before popDecoder:
// encoding/json, an empty answer being no messages.
func referenceDecode(answer []byte) (*poppedWire, error) {
	var p poppedWire
	if len(answer) == 0 {
		return &p, nil
	}
	if err := json.Unmarshal(answer, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// differ decodes answer both ways, the lean way with a decoder that has
// already read a full answer (what it reuses must not show through), and
// fails where they disagree. It answers the lean decoder's result.
func differ(t *testing.T, answer []byte) (*poppedWire, error) {
	t.Helper()
	var d popDecoder
	if _, err := d.decode(warmAnswer); err != nil {
		t.Fatal(err)
	}
	got, err := d.decode(answer)
	want, refErr := referenceDecode(answer)
	switch {
	case err != nil && refErr == nil:
		// JSON text is UTF-8; encoding/json lets other bytes through.
		if utf8.Valid(answer) {
			t.Fatalf("lean: %v; encoding/json reads %q", err, answer)
		}
		return nil, err
	case err == nil && refErr != nil:
		// Nesting right at the limit (10,000 levels) needs a longer input:
		// there the scanner is one empty level more lenient.
		if len(answer) <= 20000 {
			t.Fatalf("lean reads %q; encoding/json: %v", answer, refErr)
		}
		return got, nil
	case err != nil:
		return nil, err
	}
	if len(got.Messages) != len(want.Messages) {
		t.Fatalf("%d messages, encoding/json %d, in %q", len(got.Messages), len(want.Messages), answer)
	}
	for k, g := range got.Messages {
		w := want.Messages[k]
		if g.TransactionID != w.TransactionID || g.PartitionID != w.PartitionID || g.LeaseID != w.LeaseID ||
			!bytes.Equal(g.Data, w.Data) || (g.Data == nil) != (w.Data == nil) {
			t.Fatalf("message %d: %q %q %q %q, encoding/json %q %q %q %q, in %q", k, g.TransactionID, g.PartitionID, g.LeaseID, g.Data,
				w.TransactionID, w.PartitionID, w.LeaseID, w.Data, answer)
		}
	}
	return got, nil
}

// popCases are answers as the bridge writes them and as it could, and
// malformed ones: n is how many messages the answer has; errPart, for a
// malformed one, a part of what the error must say.
var popCases = []struct {
	name, answer string
	n            int
	errPart      string
}{
	{"real", string(realAnswer(3)), 3, ""},
	{"real, 100 messages", string(realAnswer(100)), 100, ""},
	{"empty (204)", "", 0, ""},
	{"no messages", `{"success":true,"queue":"q","messages":[]}`, 0, ""},
	{"null", ` null `, 0, ""},
	{"messages null", `{"messages":null}`, 0, ""},
	{"escaped", `{"messages":[{"transactionId":"a\"b\\c\/d\u00e9\ud83d\ude00","partitionId":"4\u0032",` +
		`"leaseId":"\ud800x\n","data":"s\"q"}]}`, 1, ""},
	{"other orders", `{"messages":[{"data":{"t":1,"a":[1,{"b":null}]},"leaseId":"l1","id":"x","partitionId":"7","transactionId":"t1"},` +
		`{"leaseId":"l2","consumerGroup":"g","transactionId":"t2","data":-1.5e3,"partitionId":"8","createdAt":"2025"},` +
		`{"partitionId":"9","data":null}],"queue":"q","success":true}`, 3, ""},
	{"spaces", " \n{ \"messages\" : [ { \"transactionId\" : \"t\" , \"data\" : [ ] } ] }\t", 1, ""},
	{"names folded and escaped", `{"MESSAGES":[{"TransactionID":"t","partitionid":"p","LEASEID":"l","Data":true,"\u006c\u0065aseId":"l2"}]}`, 1, ""},
	{"duplicates and nulls", `{"messages":[{"transactionId":"a","data":1},null,{"leaseId":"x"}],` +
		`"messages":[{"transactionId":null,"data":2},{"partitionId":"p"}]}`, 2, ""},
	{"messages null between", `{"messages":[{"transactionId":"a"},{"leaseId":"b"}],"messages":null,"messages":[{},{}]}`, 2, ""},

	{"truncated", string(realAnswer(2)[:500]), 0, "unexpected end"},
	{"trailing comma", `{"messages":[{"transactionId":"a",}]}`, 0, "invalid JSON at byte 34"},
	{"after the answer", `{"messages":[]} {}`, 0, "data after the answer"},
	{"spaces only", " ", 0, "unexpected end"},
	{"not an object", `[{"transactionId":"a"}]`, 0, "not a JSON object"},
	{"messages not an array", `{"messages":{"transactionId":"a"}}`, 0, "messages is not an array"},
	{"message not an object", `{"messages":[{"transactionId":"a"},"b"]}`, 0, "messages[1] is not an object"},
	{"id not a string", `{"messages":[{"partitionId":42}]}`, 0, "messages[0].partitionId is not a string"},
	{"bad escape", `{"messages":[{"leaseId":"\x"}]}`, 0, "bad escape"},
	{"not UTF-8", "{\"messages\":[{\"leaseId\":\"\xff\"}]}", 0, "invalid UTF-8"},
}

func popCase(t *testing.T, name string) []byte {
	for _, c := range popCases {
		if c.name == name {
			return []byte(c.answer)
		}
	}
	t.Fatalf("no case %q", name)
	return nil
}

// The lean decoder reads what encoding/json reads from the same bytes, and
// a malformed answer's error says what is wrong with it.
func TestPopDecoderAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, c := range popCases {
		t.Run(c.name, func(t *testing.T) {
			p, err := differ(t, []byte(c.answer))
			if c.errPart != "" {
				if err == nil || !strings.Contains(err.Error(), c.errPart) {
					t.Fatalf("error %v, want one saying %q", err, c.errPart)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Messages) != c.n {
				t.Fatalf("%d messages, want %d", len(p.Messages), c.n)
			}
		})
	}
	// What an escaped answer means, spelt out.
	p, err := differ(t, popCase(t, "escaped"))
	if err != nil {
		t.Fatal(err)
	}
	if m := p.Messages[0]; m.TransactionID != "a\"b\\c/dé😀" || m.PartitionID != "42" || m.LeaseID != "\uFFFDx\n" || string(m.Data) != `"s\"q"` {
		t.Fatalf("escaped: %+v", m)
	}
	// The bridge's answer: a real payload, the ids as written.
	p, err = differ(t, realAnswer(2))
	if err != nil {
		t.Fatal(err)
	}
	if m := p.Messages[1]; m.TransactionID != "run-1-1-0" || m.PartitionID != "42" || m.LeaseID != "9b2f3c1e-5a7d-4e8f-a1b2-c3d4e5f60718" {
		t.Fatalf("real: %+v", m)
	} else if _, ok := sentAt(m.Data); !ok {
		t.Fatalf("real: no send time in %s", m.Data)
	}
}

// The acknowledgement body names every message's ids, as JSON, also when
// its buffer last held a longer body.
func TestAckBodyNamesEveryMessage(t *testing.T) {
	t.Parallel()
	var d popDecoder
	long, err := d.decode(realAnswer(5))
	if err != nil {
		t.Fatal(err)
	}
	buf := appendAckBody(nil, "g", long)
	p, err := d.decode(popCase(t, "escaped"))
	if err != nil {
		t.Fatal(err)
	}
	buf = appendAckBody(buf[:0], `g"1`, p)
	var body struct {
		Group string `json:"consumerGroup"`
		Acks  []struct {
			TransactionID, PartitionID, LeaseID, Status string
		} `json:"acknowledgments"`
	}
	if err := json.Unmarshal(buf, &body); err != nil {
		t.Fatalf("%v: %s", err, buf)
	}
	m := p.Messages[0]
	if body.Group != `g"1` || len(body.Acks) != 1 || body.Acks[0].TransactionID != m.TransactionID ||
		body.Acks[0].PartitionID != m.PartitionID || body.Acks[0].LeaseID != m.LeaseID || body.Acks[0].Status != "completed" {
		t.Fatalf("ack body %s", buf)
	}
}

// FuzzPopDecoder holds the lean decoder to encoding/json on any input: no
// panic; where encoding/json reads an answer of UTF-8 text, the lean one
// reads the same four fields of every message; where the lean one reads
// one, so does encoding/json.
func FuzzPopDecoder(f *testing.F) {
	for _, c := range popCases {
		if len(c.answer) < 2000 {
			f.Add([]byte(c.answer))
		}
	}
	f.Fuzz(func(t *testing.T, answer []byte) {
		_, _ = differ(t, answer)
	})
}

// BenchmarkPopAnswer: reading a 100-message answer, encoding/json's way
// (as pop did) and the lean way (a decoder reused, as each consumer's is).
func BenchmarkPopAnswer(b *testing.B) {
	answer := realAnswer(100)
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(answer)))
		for b.Loop() {
			if _, err := referenceDecode(answer); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonscan", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(answer)))
		var d popDecoder
		for b.Loop() {
			if _, err := d.decode(answer); err != nil {
				b.Fatal(err)
			}
		}
	})
}
