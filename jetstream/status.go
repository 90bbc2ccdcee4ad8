package jetstream

import (
	"strconv"
	"time"
)

// Status messages: an empty message whose header block holds only
// nats-server's inline status line (and for some, the pull request's
// pending counts), sent to a pull request's reply. nats.go, the nats CLI
// and other clients act on the code and match the description, so both
// are nats-server's words (server/consumer.go). Each function appends the
// header block to dst; the body is always empty.

// The headers the status messages carry (server/consumer.go, stream.go).
const (
	PendingMessagesHeader = "Nats-Pending-Messages"
	PendingBytesHeader    = "Nats-Pending-Bytes"
	LastConsumerHeader    = "Nats-Last-Consumer"
	LastStreamHeader      = "Nats-Last-Stream"
)

// AppendStatus appends a status line without headers:
// "NATS/1.0 <code> <description>\r\n\r\n" (no description: none).
func AppendStatus(dst []byte, code int, description string) []byte {
	dst = append(dst, "NATS/1.0 "...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	if description != "" {
		dst = append(dst, ' ')
		dst = append(dst, description...)
	}
	return append(dst, "\r\n\r\n"...)
}

// appendPendingStatus appends a status line with the pull request's
// pending messages and bytes.
func appendPendingStatus(dst []byte, code int, description string, msgs, bytes int) []byte {
	dst = append(dst, "NATS/1.0 "...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	dst = append(dst, ' ')
	dst = append(dst, description...)
	dst = append(dst, "\r\n"+PendingMessagesHeader+": "...)
	dst = strconv.AppendInt(dst, int64(msgs), 10)
	dst = append(dst, "\r\n"+PendingBytesHeader+": "...)
	dst = strconv.AppendInt(dst, int64(bytes), 10)
	return append(dst, "\r\n\r\n"...)
}

// AppendIdleHeartbeat: 100 Idle Heartbeat, with the consumer's and the
// stream's last delivered sequences (a parked request silent for its
// idle_heartbeat).
func AppendIdleHeartbeat(dst []byte, lastConsumerSeq, lastStreamSeq uint64) []byte {
	dst = append(dst, "NATS/1.0 100 Idle Heartbeat\r\n"+LastConsumerHeader+": "...)
	dst = strconv.AppendUint(dst, lastConsumerSeq, 10)
	dst = append(dst, "\r\n"+LastStreamHeader+": "...)
	dst = strconv.AppendUint(dst, lastStreamSeq, 10)
	return append(dst, "\r\n\r\n"...)
}

// AppendNoMessages: 404 No Messages (a no_wait request and nothing to
// deliver).
func AppendNoMessages(dst []byte) []byte { return AppendStatus(dst, 404, "No Messages") }

// AppendRequestTimeout: 408 Request Timeout, with what the request still
// wanted (its expiry came, or the bridge hands it back at shutdown).
func AppendRequestTimeout(dst []byte, pendingMsgs, pendingBytes int) []byte {
	return appendPendingStatus(dst, 408, "Request Timeout", pendingMsgs, pendingBytes)
}

// AppendInterestExpired: 408 Interest Expired, with the pending counts
// (the requester's interest went away).
func AppendInterestExpired(dst []byte, pendingMsgs, pendingBytes int) []byte {
	return appendPendingStatus(dst, 408, "Interest Expired", pendingMsgs, pendingBytes)
}

// AppendRequestsPending: 408 Requests Pending (a no_wait request while
// others wait for what there is).
func AppendRequestsPending(dst []byte) []byte { return AppendStatus(dst, 408, "Requests Pending") }

// AppendBatchCompleted: 409 Batch Completed, with the bytes left (the
// batch is delivered, max_bytes is not used up).
func AppendBatchCompleted(dst []byte, pendingMsgs, pendingBytes int) []byte {
	return appendPendingStatus(dst, 409, "Batch Completed", pendingMsgs, pendingBytes)
}

// AppendMaxBytesExceeded: 409 Message Size Exceeds MaxBytes, with the
// pending counts (the next message is larger than the bytes left).
func AppendMaxBytesExceeded(dst []byte, pendingMsgs, pendingBytes int) []byte {
	return appendPendingStatus(dst, 409, "Message Size Exceeds MaxBytes", pendingMsgs, pendingBytes)
}

// AppendConsumerDeleted: 409 Consumer Deleted (requests parked when the
// consumer was deleted).
func AppendConsumerDeleted(dst []byte) []byte { return AppendStatus(dst, 409, "Consumer Deleted") }

// AppendLeadershipChange: 409 Leadership Change (the consumer moved to
// another bridge; the client pulls again at once).
func AppendLeadershipChange(dst []byte) []byte { return AppendStatus(dst, 409, "Leadership Change") }

// AppendExceededMaxWaiting: 409 Exceeded MaxWaiting.
func AppendExceededMaxWaiting(dst []byte) []byte {
	return AppendStatus(dst, 409, "Exceeded MaxWaiting")
}

// AppendExceededMaxRequestBatch: 409 Exceeded MaxRequestBatch of <n>.
func AppendExceededMaxRequestBatch(dst []byte, limit int) []byte {
	return AppendStatus(dst, 409, "Exceeded MaxRequestBatch of "+strconv.Itoa(limit))
}

// AppendExceededMaxRequestExpires: 409 Exceeded MaxRequestExpires of <d>
// (formatted as nats-server formats a time.Duration).
func AppendExceededMaxRequestExpires(dst []byte, limit time.Duration) []byte {
	return AppendStatus(dst, 409, "Exceeded MaxRequestExpires of "+limit.String())
}

// AppendExceededMaxRequestMaxBytes: 409 Exceeded MaxRequestMaxBytes of <n>.
func AppendExceededMaxRequestMaxBytes(dst []byte, limit int) []byte {
	return AppendStatus(dst, 409, "Exceeded MaxRequestMaxBytes of "+strconv.Itoa(limit))
}

// AppendBadRequest: 400 Bad Request - <why> (a pull request the bridge
// refuses; nats.go ends a Consume on it).
func AppendBadRequest(dst []byte, why string) []byte {
	return AppendStatus(dst, 400, "Bad Request - "+why)
}

// AppendNoResponders: 503, what nats-server's clients get for a pull
// request to a consumer that does not exist (no server subscribes to its
// MSG.NEXT subject); nats.go reports ErrNoResponders and `nats consumer
// next` relies on it.
func AppendNoResponders(dst []byte) []byte { return AppendStatus(dst, 503, "") }
