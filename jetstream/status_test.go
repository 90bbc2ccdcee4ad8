package jetstream

import (
	"bufio"
	"bytes"
	"net/textproto"
	"testing"
)

// The status messages byte for byte as nats-server sends them, since
// clients other than nats.go parse the inline status line themselves.
func TestStatusMessagesAsNatsServerSendsThem(t *testing.T) {
	cases := []struct{ got, want string }{
		{string(AppendStatus(nil, 404, "No Messages")), "NATS/1.0 404 No Messages\r\n\r\n"},
		{string(AppendBadRequest(nil, "heartbeat value too large")), "NATS/1.0 400 Bad Request - heartbeat value too large\r\n\r\n"},
		{string(AppendNoResponders(nil)), "NATS/1.0 503\r\n\r\n"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
		// And the block is a well-formed MIME header after its status line.
		r := textproto.NewReader(bufio.NewReader(bytes.NewReader([]byte(c.got))))
		if _, err := r.ReadLine(); err != nil {
			t.Fatal(err)
		}
		if _, err := r.ReadMIMEHeader(); err != nil {
			t.Errorf("%q: %v", c.got, err)
		}
	}
	// Appending keeps what dst held.
	if got := string(AppendNoResponders([]byte("x"))); got != "xNATS/1.0 503\r\n\r\n" {
		t.Errorf("append: %q", got)
	}
}
