package publish

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/queenbridge/queenbridge/jsonapi"
)

// contentVersion is the version of the message content queen.publish
// writes (pgwire/sql/publish_surface.sql has the layout).
const contentVersion = 1

// flagBytes marks a payload of the bytea form: raw bytes, stored as a JSON
// payload when they are one, else as their base64 (jsonapi.BodyPayload).
const flagBytes = 1

var errShort = errors.New("message content ends early")

// decode turns one message's content into a push item. txid is the
// transactionId it gets when the caller named none.
func decode(content []byte, txid string) (jsonapi.Item, error) {
	if len(content) < 2 {
		return jsonapi.Item{}, errShort
	}
	if content[0] != contentVersion {
		return jsonapi.Item{}, fmt.Errorf("message content version %d; this bridge reads %d", content[0], contentVersion)
	}
	flags, rest := content[1], content[2:]
	var names [4]string
	for i := range names {
		if len(rest) < 2 {
			return jsonapi.Item{}, errShort
		}
		n := int(binary.BigEndian.Uint16(rest))
		if len(rest) < 2+n {
			return jsonapi.Item{}, errShort
		}
		names[i], rest = string(rest[2:2+n]), rest[2+n:]
	}
	it := jsonapi.Item{Queue: names[0], Partition: names[1], TransactionID: names[2], TraceID: names[3]}
	// The SQL function checked the names; the push path trusts its callers
	// to, so they are checked again here against the push's own rules.
	for _, c := range []struct{ name, value string }{{"queue", it.Queue}, {"partition", it.Partition}} {
		if err := jsonapi.CheckName(c.name, c.value, true); err != nil {
			return it, err
		}
	}
	for _, c := range []struct{ name, value string }{{"transaction_id", it.TransactionID}, {"trace_id", it.TraceID}} {
		if c.value != "" {
			if err := jsonapi.CheckName(c.name, c.value, true); err != nil {
				return it, err
			}
		}
	}
	if it.TransactionID == "" {
		it.TransactionID = txid
	}
	if flags&flagBytes != 0 {
		it.Payload, it.Encoded = jsonapi.BodyPayload(rest)
	} else {
		it.Payload = rest // jsonb's text: JSON
	}
	return it, nil
}

// walTransactionID is the transactionId of a message whose caller named
// none: the source cluster, the transaction's commit position and the
// message's index in it. A replay hands out the same message at the same
// place, so it gets the same id, and the push's deduplication stores it
// once.
func walTransactionID(systemID string, commitLSN uint64, index int) string {
	return fmt.Sprintf("pg:%s:%X/%X:%d", systemID, uint32(commitLSN>>32), uint32(commitLSN), index)
}
