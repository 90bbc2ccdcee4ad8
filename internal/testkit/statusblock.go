package testkit

import (
	"bufio"
	"bytes"
	"net/textproto"
	"testing"
)

// StatusBlocks checks NATS status header blocks against the bytes
// nats-server sends (got, want pairs), and that each is a well-formed
// MIME header after its status line, as clients other than nats.go parse
// it themselves.
func StatusBlocks(t *testing.T, cases [][2]string) {
	t.Helper()
	for _, c := range cases {
		got, want := c[0], c[1]
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
		r := textproto.NewReader(bufio.NewReader(bytes.NewReader([]byte(got))))
		if _, err := r.ReadLine(); err != nil {
			t.Fatal(err)
		}
		if _, err := r.ReadMIMEHeader(); err != nil {
			t.Errorf("%q: %v", got, err)
		}
	}
}
