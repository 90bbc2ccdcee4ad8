package jsonapi

import "strconv"

// PubAcks are one JetStream stream's answers, in the shapes of
// nats-server's JSPubAckResponse, which every JetStream client parses:
// {"stream":S,"seq":N} and its duplicate and buffered forms on success,
// {"error":{...},"stream":S,"seq":0} on a refusal. Each is a fixed
// template per stream with the number or the description appended, as
// nats-server renders its own success answer; no JSON encoder runs per
// message.
type PubAcks struct {
	head     []byte // {"stream":"NAME","seq":
	errTail  []byte // },"stream":"NAME","seq":0}
	buffered []byte // the whole buffered answer
}

// NewPubAcks makes a stream's templates. The name is written as given:
// stream names are letters, digits, '-' and '_', which JSON needs no
// escape for (the jetstream room checks them).
func NewPubAcks(stream string) *PubAcks {
	a := &PubAcks{head: []byte(`{"stream":"` + stream + `","seq":`), errTail: []byte(`},"stream":"` + stream + `","seq":0}`)}
	a.buffered = append(append([]byte(nil), a.head...), `0,"buffered":true}`...)
	return a
}

// AppendQueued appends the answer to a message committed at seq, its offset in
// its partition.
func (a *PubAcks) AppendQueued(dst []byte, seq int64) []byte {
	dst = strconv.AppendInt(append(dst, a.head...), seq, 10)
	return append(dst, '}')
}

// AppendDuplicate appends the answer to a message whose original is stored at
// seq; nothing was written.
func (a *PubAcks) AppendDuplicate(dst []byte, seq int64) []byte {
	dst = strconv.AppendInt(append(dst, a.head...), seq, 10)
	return append(dst, `,"duplicate":true}`...)
}

// AppendBuffered appends the answer to a message spooled (seq 0,
// "buffered":true).
func (a *PubAcks) AppendBuffered(dst []byte) []byte { return append(dst, a.buffered...) }

// AppendFailed appends JetStream's API error: its HTTP-like code, its error code
// (nats-server's errors.json) and a description for people; nothing was
// written.
func (a *PubAcks) AppendFailed(dst []byte, code, errCode int, desc string) []byte {
	dst = append(dst, `{"error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	dst = append(dst, `,"err_code":`...)
	dst = strconv.AppendInt(dst, int64(errCode), 10)
	dst = append(dst, `,"description":`...)
	dst = AppendString(dst, desc)
	return append(dst, a.errTail...)
}
