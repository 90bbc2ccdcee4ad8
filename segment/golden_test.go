package segment_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/queenbridge/queenbridge/segment"
)

// goldenSmall and goldenLarge are the frames of the golden segments in
// testdata, which the codec wrote before frames could carry a NATS subject
// and header: format-v1-raw.bin (stored raw) and format-v1-zstd.bin
// (compressed). They must read back unchanged for as long as a database
// may hold segments of that age.
func goldenSmall() []segment.Frame {
	small := []segment.Frame{
		{TransactionID: "order-1001", TraceID: "trace-a", Payload: []byte(`{"sku":"A-1","qty":2}`)},
		{TransactionID: "order-1002", Flags: segment.FlagBase64, Payload: []byte(`"AGJpbmFyef8="`)},
		{TransactionID: "order-1003", Flags: segment.FlagEncrypted | segment.FlagKeyed, Payload: []byte{0, 1, 2, 3, 0xff}},
	}
	for i := range small {
		small[i].ID[0], small[i].ID[15] = 0x01, byte(i+1)
	}
	return small
}

func goldenLarge() []segment.Frame {
	big := make([]segment.Frame, 60)
	for i := range big {
		big[i] = segment.Frame{TransactionID: fmt.Sprintf("tx-%03d", i), Payload: []byte(fmt.Sprintf(`{"order":%d,"pad":"%s"}`, i, strings.Repeat("x", 100)))}
		big[i].ID[0], big[i].ID[15] = 0x02, byte(i)
	}
	return big
}

func TestSegmentsOfTheFirstFormatStillRead(t *testing.T) {
	for _, c := range []struct {
		file  string
		codec byte
		want  []segment.Frame
	}{
		{"testdata/format-v1-raw.bin", 0, goldenSmall()},
		{"testdata/format-v1-zstd.bin", 1, goldenLarge()},
	} {
		t.Run(c.file, func(t *testing.T) {
			blob, err := os.ReadFile(c.file)
			if err != nil {
				t.Fatal(err)
			}
			if blob[0] != segment.FormatV1 || blob[1] != c.codec {
				t.Fatalf("golden header %x, want format 1 codec %d", blob[:2], c.codec)
			}
			checkUnpacked(t, blob, c.want) // no subject, no header, no FlagNATS
			// A frame without NATS fields is packed exactly as before, so a
			// bridge of either age reads what the other wrote.
			if c.codec == 0 && !bytes.Equal(segment.Pack(nil, c.want), blob) {
				t.Fatal("packing the golden frames again does not give the golden bytes")
			}
		})
	}
}
