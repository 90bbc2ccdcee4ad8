package jetstream

import (
	"bufio"
	"bytes"
	"net/textproto"
	"testing"
	"time"
)

// The status messages byte for byte as nats-server sends them
// (server/consumer.go), since clients other than nats.go parse the inline
// status line themselves.
func TestStatusMessagesAsNatsServerSendsThem(t *testing.T) {
	cases := []struct{ got, want string }{
		{string(AppendIdleHeartbeat(nil, 9, 105)), "NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 9\r\nNats-Last-Stream: 105\r\n\r\n"},
		{string(AppendNoMessages(nil)), "NATS/1.0 404 No Messages\r\n\r\n"},
		{string(AppendRequestTimeout(nil, 3, 1024)), "NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 3\r\nNats-Pending-Bytes: 1024\r\n\r\n"},
		{string(AppendInterestExpired(nil, 1, 0)), "NATS/1.0 408 Interest Expired\r\nNats-Pending-Messages: 1\r\nNats-Pending-Bytes: 0\r\n\r\n"},
		{string(AppendRequestsPending(nil)), "NATS/1.0 408 Requests Pending\r\n\r\n"},
		{string(AppendBatchCompleted(nil, 0, 512)), "NATS/1.0 409 Batch Completed\r\nNats-Pending-Messages: 0\r\nNats-Pending-Bytes: 512\r\n\r\n"},
		{string(AppendMaxBytesExceeded(nil, 5, 100)), "NATS/1.0 409 Message Size Exceeds MaxBytes\r\nNats-Pending-Messages: 5\r\nNats-Pending-Bytes: 100\r\n\r\n"},
		{string(AppendConsumerDeleted(nil)), "NATS/1.0 409 Consumer Deleted\r\n\r\n"},
		{string(AppendLeadershipChange(nil)), "NATS/1.0 409 Leadership Change\r\n\r\n"},
		{string(AppendExceededMaxWaiting(nil)), "NATS/1.0 409 Exceeded MaxWaiting\r\n\r\n"},
		{string(AppendExceededMaxRequestBatch(nil, 100)), "NATS/1.0 409 Exceeded MaxRequestBatch of 100\r\n\r\n"},
		{string(AppendExceededMaxRequestExpires(nil, 90*time.Second)), "NATS/1.0 409 Exceeded MaxRequestExpires of 1m30s\r\n\r\n"},
		{string(AppendExceededMaxRequestMaxBytes(nil, 4096)), "NATS/1.0 409 Exceeded MaxRequestMaxBytes of 4096\r\n\r\n"},
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
	if got := string(AppendNoMessages([]byte("x"))); got != "xNATS/1.0 404 No Messages\r\n\r\n" {
		t.Errorf("append: %q", got)
	}
}
