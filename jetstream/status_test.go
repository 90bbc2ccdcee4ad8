package jetstream

import (
	"testing"

	"github.com/queenbridge/queenbridge/internal/testkit"
)

// The status messages byte for byte as nats-server sends them, since
// clients other than nats.go parse the inline status line themselves.
func TestStatusMessagesAsNatsServerSendsThem(t *testing.T) {
	testkit.StatusBlocks(t, [][2]string{
		{string(AppendStatus(nil, 404, "No Messages")), "NATS/1.0 404 No Messages\r\n\r\n"},
		{string(AppendBadRequest(nil, "heartbeat value too large")), "NATS/1.0 400 Bad Request - heartbeat value too large\r\n\r\n"},
		{string(AppendNoResponders(nil)), "NATS/1.0 503\r\n\r\n"},
	})
	// Appending keeps what dst held.
	if got := string(AppendNoResponders([]byte("x"))); got != "xNATS/1.0 503\r\n\r\n" {
		t.Errorf("append: %q", got)
	}
}
