package jsonapi

import (
	"strings"
	"testing"
	"time"
)

// PoppedLen is at least what AppendPopped appends when no string needs
// escaping, and not far above it: the answer's buffer is sized by it.
func TestPoppedLenCoversAppendPopped(t *testing.T) {
	for _, m := range []PoppedMessage{
		{TransactionID: "t", Payload: []byte(`{}`), CreatedAt: time.Date(2026, 12, 2, 10, 11, 12, 123456789, time.UTC), PartitionID: 1, Partition: "p"},
		{TransactionID: strings.Repeat("x", 300), TraceID: "trace", Payload: []byte(`"` + strings.Repeat("y", 5000) + `"`), Encoded: true,
			CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)), PartitionID: 1<<63 - 1, Partition: strings.Repeat("p", 40)},
	} {
		for _, lease := range []string{"", "01939d2c-5b1e-7a3c-8f00-0123456789ab"} {
			got := len(AppendPopped(nil, &m, lease, "group"))
			if n := PoppedLen(&m, lease, "group"); n < got || n > got+80 {
				t.Errorf("PoppedLen %d for %d bytes appended (%q…)", n, got, m.TransactionID[:1])
			}
		}
	}
}
