package jsonapi

import (
	"encoding/base64"

	"github.com/queenbridge/queenbridge/internal/jsonscan"
)

// BodyPayload is the payload a whole message body is stored as, when the
// body is the message (a JetStream publish) rather than a push envelope:
//
//   - a body that is one valid JSON value (UTF-8, white space around it
//     allowed) is the payload as it is, byte for byte: it is returned, not
//     copied;
//   - an empty body is the empty base64 string "", encoded, so that a
//     reader gets back the empty body that was published (not null, which
//     a producer may also publish);
//   - any other body (binary, plain text) is a JSON string of its standard
//     base64, and encoded is true: the frame is flagged so that reads mark
//     it "encoding":"base64" and a reader can tell it from a JSON string.
func BodyPayload(body []byte) (payload []byte, encoded bool) {
	if len(body) == 0 {
		return emptyBase64, true
	}
	if IsJSON(body) {
		return body, false
	}
	out := make([]byte, 0, 2+base64.StdEncoding.EncodedLen(len(body)))
	out = append(out, '"')
	out = base64.StdEncoding.AppendEncode(out, body)
	return append(out, '"'), true
}

// emptyBase64 is the payload of an empty body: the base64 of nothing.
var emptyBase64 = []byte(`""`)

// IsJSON reports whether b is exactly one valid JSON value (RFC 8259, UTF-8
// in its strings), with nothing but white space around it.
func IsJSON(b []byte) bool {
	s := jsonscan.New(b)
	if _, err := s.Value(0); err != nil {
		return false
	}
	return s.AtEnd()
}
