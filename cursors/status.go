package cursors

import "strconv"

// Status messages go to a pull request's inbox with an empty body and an
// inline status line, as nats-server sends them: nats.go and the CLI act
// on the code and description, and Consume subtracts the pending headers
// from what it waits for (without them it stalls until its heartbeat
// watchdog fires).

// statusHeader is "NATS/1.0 <code> <description>\r\n" with the pending
// headers when withPending, then the blank line.
func statusHeader(code int, desc string, withPending bool, msgs, bytes int) []byte {
	h := make([]byte, 0, 96)
	h = append(h, "NATS/1.0 "...)
	h = strconv.AppendInt(h, int64(code), 10)
	h = append(h, ' ')
	h = append(h, desc...)
	h = append(h, "\r\n"...)
	if withPending {
		h = append(h, "Nats-Pending-Messages: "...)
		h = strconv.AppendInt(h, int64(msgs), 10)
		h = append(h, "\r\nNats-Pending-Bytes: "...)
		h = strconv.AppendInt(h, int64(bytes), 10)
		h = append(h, "\r\n"...)
	}
	return append(h, "\r\n"...)
}

// The status lines the engine sends.
const (
	descHeartbeat       = "Idle Heartbeat"
	descNoMessages      = "No Messages"
	descTimeout         = "Request Timeout"
	descMaxBytes        = "Message Size Exceeds MaxBytes"
	descBatchCompleted  = "Batch Completed"
	descDeleted         = "Consumer Deleted"
	descLeadership      = "Leadership Change"
	descMaxWaiting      = "Exceeded MaxWaiting"
	descMaxRequestBatch = "Exceeded MaxRequestBatch of "
	descMaxRequestBytes = "Exceeded MaxRequestMaxBytes of "
	descMaxRequestExp   = "Exceeded MaxRequestExpires of "
)

// heartbeatHeader is 100 Idle Heartbeat with the last consumer and stream
// sequences delivered.
func heartbeatHeader(lastConsumer, lastStream uint64) []byte {
	h := make([]byte, 0, 96)
	h = append(h, "NATS/1.0 100 "+descHeartbeat+"\r\nNats-Last-Consumer: "...)
	h = strconv.AppendUint(h, lastConsumer, 10)
	h = append(h, "\r\nNats-Last-Stream: "...)
	h = strconv.AppendUint(h, lastStream, 10)
	return append(h, "\r\n\r\n"...)
}
