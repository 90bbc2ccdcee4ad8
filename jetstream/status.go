package jetstream

import "strconv"

// Status messages: an empty message whose header block holds only
// nats-server's inline status line, sent to a request's reply. nats.go,
// the nats CLI and other clients act on the code and match the
// description, so both are nats-server's words. The intake and the API
// refuse with these; a consumer's own statuses (heartbeats, 404, 408 and
// the 409s, with the pending counts) are the engine's (cursors/status.go).

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
