package publish

import (
	"encoding/binary"
	"strings"
	"testing"
)

// content builds a message as queen.publish writes it (version 1).
func content(version, flags byte, names [4]string, payload string) []byte {
	out := []byte{version, flags}
	for _, n := range names {
		out = binary.BigEndian.AppendUint16(out, uint16(len(n)))
		out = append(out, n...)
	}
	return append(out, payload...)
}

func TestDecode(t *testing.T) {
	it, err := decode(content(1, 0, [4]string{"q", "p", "", "tr"}, `{"a":1}`), "derived")
	if err != nil || it.Queue != "q" || it.Partition != "p" || it.TransactionID != "derived" || it.TraceID != "tr" ||
		string(it.Payload) != `{"a":1}` || it.Encoded {
		t.Fatalf("jsonb form: %+v %v", it, err)
	}
	it, err = decode(content(1, flagBytes, [4]string{"q", "p", "mine", ""}, "\x00\x01"), "derived")
	if err != nil || it.TransactionID != "mine" || !it.Encoded || string(it.Payload) != `"AAE="` {
		t.Fatalf("bytea form: %+v %v", it, err)
	}
	it, err = decode(content(1, flagBytes, [4]string{"q", "p", "", ""}, `[1,2]`), "derived")
	if err != nil || it.Encoded || string(it.Payload) != `[1,2]` {
		t.Fatalf("bytea form holding JSON: %+v %v", it, err)
	}
	for _, bad := range []struct {
		b    []byte
		want string
	}{
		{content(2, 0, [4]string{"q", "p", "", ""}, `1`), "version 2"},
		{content(1, 0, [4]string{"q", "p", "", ""}, `1`)[:5], "ends early"},
		{[]byte{1}, "ends early"},
		{content(1, 0, [4]string{"", "p", "", ""}, `1`), "queue"},
		{content(1, 0, [4]string{"q", "a\x01", "", ""}, `1`), "partition"},
	} {
		if _, err := decode(bad.b, "x"); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("% x: %v, want an error saying %q", bad.b, err, bad.want)
		}
	}
	if got := walTransactionID("7716", 0x1_0000_00A0, 3); got != "pg:7716:1/A0:3" {
		t.Errorf("walTransactionID: %s", got)
	}
}
