package jetstream

import (
	"strconv"

	"github.com/queenbridge/queenbridge/jsonapi"
)

// The answers are JetStream's PubAck shapes (nats-server's JSPubAckResponse),
// which every JetStream client parses: {"stream":S,"seq":N} and its
// duplicate form on success, {"error":{...},"stream":S,"seq":0} on a
// refusal. Each is a fixed template per stream with the number or the
// description appended, as nats-server renders its own success answer; no
// JSON encoder runs per message.

// acks are one stream's templates.
type acks struct {
	head     []byte // {"stream":"NAME","seq":
	errTail  []byte // },"stream":"NAME","seq":0}
	buffered []byte // the whole buffered answer
}

// Stream names are letters, digits, '-' and '_' (Stream.check), which JSON
// needs no escape for.
func newAcks(stream string) acks {
	a := acks{head: []byte(`{"stream":"` + stream + `","seq":`), errTail: []byte(`},"stream":"` + stream + `","seq":0}`)}
	a.buffered = append(append([]byte(nil), a.head...), `0,"buffered":true}`...)
	return a
}

// queued: committed at seq, the offset in its partition.
func (a *acks) queued(dst []byte, seq int64) []byte {
	dst = strconv.AppendInt(append(dst, a.head...), seq, 10)
	return append(dst, '}')
}

// duplicate: the original is stored at seq; nothing was written.
func (a *acks) duplicate(dst []byte, seq int64) []byte {
	dst = strconv.AppendInt(append(dst, a.head...), seq, 10)
	return append(dst, `,"duplicate":true}`...)
}

// refusal is an answer that is not a PubAck: JetStream's API error, its
// HTTP-like code and its error code (nats-server's errors.json), and a
// description for people.
type refusal struct {
	code, errCode int
	desc          string
}

// failed renders r: nothing was written.
func (a *acks) failed(dst []byte, r refusal) []byte {
	dst = append(dst, `{"error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(r.code), 10)
	dst = append(dst, `,"err_code":`...)
	dst = strconv.AppendInt(dst, int64(r.errCode), 10)
	dst = append(dst, `,"description":`...)
	dst = jsonapi.AppendString(dst, r.desc)
	return append(dst, a.errTail...)
}

// The codes of an API error, as nats-server uses HTTP's numbers; the
// push path's statuses are the same numbers.
const (
	codeBadRequest  = 400
	codeUnavailable = 503
)

// JetStream's error codes for the refusals the intake answers, as
// nats-server numbers them (server/errors.json), so that clients that
// branch on an APIError's ErrorCode branch alike.
const (
	errBadRequest        = 10003 // JSBadRequestErr: what no JetStream code names
	errTemporarily       = 10008 // JSClusterNotAvailErr: shutting down, too busy
	errNotForAccount     = 10039 // JSNotEnabledForAccountErr: no tenant for the account
	errTooLarge          = 10054 // JSStreamMessageExceedsMaximumErr
	errStreamNotMatch    = 10060 // JSStreamNotMatchErr
	errStoreFailed       = 10077 // JSStreamStoreFailedF: neither written nor spooled
	errTTLDisabled       = 10166 // JSMessageTTLDisabledErr
	errCountersDisabled  = 10168 // JSMessageIncrDisabledErr
	errAtomicDisabled    = 10174 // JSAtomicPublishDisabledErr
	errSchedulesDisabled = 10188 // JSMessageSchedulesDisabledErr
)
