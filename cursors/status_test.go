package cursors

import (
	"strconv"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testkit"
)

// The engine's status messages byte for byte as nats-server sends them
// (server/consumer.go), since clients other than nats.go parse the inline
// status line and the pending headers themselves.
func TestStatusMessagesAsNatsServerSendsThem(t *testing.T) {
	testkit.StatusBlocks(t, [][2]string{
		{string(heartbeatHeader(9, 105)), "NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 9\r\nNats-Last-Stream: 105\r\n\r\n"},
		{string(statusHeader(404, descNoMessages, false, 0, 0)), "NATS/1.0 404 No Messages\r\n\r\n"},
		{string(statusHeader(408, descTimeout, true, 3, 1024)), "NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 3\r\nNats-Pending-Bytes: 1024\r\n\r\n"},
		{string(statusHeader(409, descBatchCompleted, true, 0, 512)), "NATS/1.0 409 Batch Completed\r\nNats-Pending-Messages: 0\r\nNats-Pending-Bytes: 512\r\n\r\n"},
		{string(statusHeader(409, descMaxBytes, true, 5, 100)), "NATS/1.0 409 Message Size Exceeds MaxBytes\r\nNats-Pending-Messages: 5\r\nNats-Pending-Bytes: 100\r\n\r\n"},
		{string(statusHeader(409, descDeleted, false, 0, 0)), "NATS/1.0 409 Consumer Deleted\r\n\r\n"},
		{string(statusHeader(409, descLeadership, false, 0, 0)), "NATS/1.0 409 Leadership Change\r\n\r\n"},
		{string(statusHeader(409, descMaxWaiting, false, 0, 0)), "NATS/1.0 409 Exceeded MaxWaiting\r\n\r\n"},
		{string(statusHeader(409, descMaxRequestBatch+strconv.Itoa(100), false, 0, 0)), "NATS/1.0 409 Exceeded MaxRequestBatch of 100\r\n\r\n"},
		{string(statusHeader(409, descMaxRequestExp+(90*time.Second).String(), false, 0, 0)), "NATS/1.0 409 Exceeded MaxRequestExpires of 1m30s\r\n\r\n"},
		{string(statusHeader(409, descMaxRequestBytes+strconv.Itoa(4096), false, 0, 0)), "NATS/1.0 409 Exceeded MaxRequestMaxBytes of 4096\r\n\r\n"},
	})
}
