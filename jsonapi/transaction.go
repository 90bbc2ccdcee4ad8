package jsonapi

import (
	"errors"
	"strconv"
	"time"

	"github.com/queenbridge/queenbridge/internal/jsonscan"
)

// Queen's transaction wire (POST /api/v1/transaction, <prefix>.v1.transaction):
//
//	{"operations": [
//	   {"type": "push", "items": [{"queue", "partition", "payload", "transactionId", "traceId"}, ...]},
//	   {"type": "push", "queue", "partition", "payload" (or "data"), "transactionId", "traceId"},
//	   {"type": "ack", "transactionId", "partitionId", "status", "consumerGroup", "leaseId", "error"}],
//	 "requiredLeases": [...]}
//
// A push operation with items is one operation per item (Queen flattens
// them); without items it is itself one item. Indexes in errors and
// answers count operations after flattening.

// TxnOp is one operation of a transaction, after flattening: a push item
// or an acknowledgement.
type TxnOp struct {
	Push bool // Item is set; else Ack
	Item Item
	Ack  Ack
}

// The ack statuses a transaction takes (Queen's transaction function takes
// no others): failed is a dead letter at once, as dlq.
var txnAckStatuses = map[string]bool{"": true, "completed": true, "success": true, "failed": true, "dlq": true}

// DecodeTransaction reads a transaction body: every operation is checked
// before any is returned, and the first bad one rejects the whole body
// naming operations[i] and the field. Payloads are sub-slices of body.
// maxOps bounds the operations after flattening (0: no bound).
// requiredLeases is accepted and ignored, as Queen does.
func DecodeTransaction(body []byte, maxOps int) ([]TxnOp, error) {
	const required = "operations array required" // Queen's one message for all three
	s := jsonscan.New(body)
	var ops []TxnOp
	err := arrayMember(s, "operations", bodyRefusals{required, required, required}, func() (err error) {
		ops, err = decodeOps(s, maxOps)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ops, nil
}

func decodeOps(s *jsonscan.Scanner, maxOps int) ([]TxnOp, error) {
	ops := []TxnOp{}
	err := elements(s, func(int) (err error) {
		if ops, err = decodeOp(s, ops); err != nil {
			return err
		}
		if maxOps > 0 && len(ops) > maxOps {
			return Badf("the transaction has more than %d operations (after flattening push items); at most %d per transaction", maxOps, maxOps)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, Badf("operations array cannot be empty")
	}
	return ops, nil
}

// OperationLabel names a transaction's operation i in an error:
// operations[i].
func OperationLabel(i int) string { return "operations[" + strconv.Itoa(i) + "]" }

// txnFields are the members of an operation as sent: a flat push
// operation is itself a push item.
type txnFields struct {
	itemFields
	typ, status, group, lease, errText field
	pid, items                         []byte // raw JSON; nil when absent
}

// read reads the object at the cursor (depth: how deep it sits).
func (f *txnFields) read(s *jsonscan.Scanner, depth int) error {
	raw := func(dst *[]byte) error {
		v, err := s.Value(depth + 1)
		if err != nil {
			return notJSON(err)
		}
		*dst = v
		return nil
	}
	return members(s, func(name []byte) error {
		if ok, err := f.member(s, name, depth); ok {
			return err
		}
		switch string(name) {
		case "type":
			return scanField(s, &f.typ)
		case "status":
			return scanField(s, &f.status)
		case "consumerGroup":
			return scanField(s, &f.group)
		case "leaseId":
			return scanField(s, &f.lease)
		case "error":
			return scanField(s, &f.errText)
		case "partitionId":
			return raw(&f.pid)
		case "items":
			return raw(&f.items)
		}
		return skip(s, depth+1)
	})
}

// decodeOp reads one operation and appends what it flattens to.
func decodeOp(s *jsonscan.Scanner, ops []TxnOp) ([]TxnOp, error) {
	i := len(ops)
	if s.Peek() != '{' {
		if err := skip(s, 2); err != nil {
			return nil, err
		}
		return nil, Badf("%s must be an object", OperationLabel(i))
	}
	var f txnFields
	if err := f.read(s, 2); err != nil {
		return nil, err
	}
	if f.typ.set && !f.typ.str {
		return nil, Badf("%s.type must be a string", OperationLabel(i))
	}
	switch f.typ.value {
	case "push":
		if f.items == nil || string(f.items) == "null" {
			it, err := txnItem(&f.itemFields, i) // the flat form: the operation is the item
			return append(ops, TxnOp{Push: true, Item: it}), err
		}
		return decodeTxnItems(f.items, ops)
	case "ack":
		a, err := f.ack(i)
		return append(ops, TxnOp{Ack: a}), err
	}
	if !f.typ.set {
		return nil, Badf("%s: unknown operation type (type is required: push or ack)", OperationLabel(i))
	}
	return nil, Badf("%s: unknown operation type %q", OperationLabel(i), f.typ.value)
}

// decodeTxnItems reads a push operation's items: one operation each.
func decodeTxnItems(raw []byte, ops []TxnOp) ([]TxnOp, error) {
	items, err := decodeItemList(raw, OperationLabel(len(ops))+".items", "operations", len(ops))
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		ops = append(ops, TxnOp{Push: true, Item: it})
	}
	return ops, nil
}

// decodeItemList reads an array of push items sent inside another request
// (a transaction's push operation, a cycle's push_items): the push rules,
// with data as payload's synonym. Errors name the array as label and the
// items as list[first+k]. Payloads are sub-slices of raw.
func decodeItemList(raw []byte, label, list string, first int) ([]Item, error) {
	s := jsonscan.New(raw)
	if s.Peek() != '[' {
		return nil, Badf("%s must be an array", label)
	}
	var items []Item
	err := elements(s, func(int) error {
		at := place{list, first + len(items)}
		if s.Peek() != '{' {
			if err := skip(s, 4); err != nil {
				return err
			}
			return Badf("%s[%d] must be an object (a push item)", at.list, at.idx)
		}
		var f itemFields
		if err := f.read(s, 4); err != nil {
			return err
		}
		if f.payload == nil {
			f.payload = f.data
		}
		it, err := f.item(at)
		if err != nil {
			return err
		}
		items = append(items, it)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return items, nil
}

// txnItem is operation i as a push item: a push's rules, with data as
// payload's synonym (payload wins when both are sent).
func txnItem(f *itemFields, i int) (Item, error) {
	if f.payload == nil {
		f.payload = f.data
	}
	return f.item(place{"operations", i})
}

// ack is operation i as an acknowledgement: /api/v1/ack's rules, but only
// the statuses a transaction takes.
func (f *txnFields) ack(i int) (Ack, error) {
	for _, m := range []struct {
		name string
		f    field
	}{{"transactionId", f.txid}, {"status", f.status}, {"consumerGroup", f.group}, {"leaseId", f.lease}, {"error", f.errText}} {
		if m.f.set && !m.f.str {
			return Ack{}, Badf("%s.%s must be a string", OperationLabel(i), m.name)
		}
	}
	if !txnAckStatuses[f.status.value] {
		return Ack{}, Badf("%s.status must be completed, success, failed or dlq in a transaction, got %q", OperationLabel(i), f.status.value)
	}
	acks, err := acksFrom([]ackFields{{TransactionID: f.txid.value, PartitionID: f.pid, Status: f.status.value,
		ConsumerGroup: f.group.value, LeaseID: f.lease.value, Error: f.errText.value}}, "", false)
	if err != nil {
		var bad *BadRequest
		if errors.As(err, &bad) {
			return Ack{}, Badf("%s.%s", OperationLabel(i), bad.msg)
		}
		return Ack{}, err
	}
	return acks[0], nil
}

// TxnResult is the answer to one operation of a committed transaction.
type TxnResult struct {
	Push          bool // a push item; else an acknowledgement
	TransactionID string
	// A push item's message id, partition (its id and name), queue, offset
	// and the transaction's timestamp.
	MessageID   [16]byte
	PartitionID int64
	Queue       string
	Partition   string
	Offset      int64
	CreatedAt   time.Time
	// DLQ: the acknowledgement wrote a dead letter.
	DLQ bool
}

// AppendTxnAnswer appends a committed transaction's answer, as Queen
// answers it: {"transactionId", "success": true, "results": [...]}, one
// result per operation (push: index, type, success, transactionId,
// messageId, partitionId as a string, queueName, and the bridge's
// partition, offset, createdAt; ack: index, type, success, transactionId,
// error null, dlq).
func AppendTxnAnswer(out []byte, id [16]byte, results []TxnResult) []byte {
	out = append(out, `{"transactionId":"`...)
	out = AppendUUID(out, id)
	out = append(out, `","success":true,"results":[`...)
	for i := range results {
		r := &results[i]
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"index":`...)
		out = strconv.AppendInt(out, int64(i), 10)
		if !r.Push {
			out = append(out, `,"type":"ack","success":true,"transactionId":`...)
			out = AppendString(out, r.TransactionID)
			out = append(out, `,"error":null,"dlq":`...)
			out = strconv.AppendBool(out, r.DLQ)
			out = append(out, '}')
			continue
		}
		out = append(out, `,"type":"push","success":true,"transactionId":`...)
		out = AppendString(out, r.TransactionID)
		out = append(out, `,"messageId":"`...)
		out = AppendUUID(out, r.MessageID)
		out = append(out, `","partitionId":"`...)
		out = strconv.AppendInt(out, r.PartitionID, 10)
		out = append(out, `","queueName":`...)
		out = AppendString(out, r.Queue)
		out = append(out, `,"partition":`...)
		out = AppendString(out, r.Partition)
		out = append(out, `,"offset":`...)
		out = strconv.AppendInt(out, r.Offset, 10)
		out = append(out, `,"createdAt":"`...)
		out = r.CreatedAt.UTC().AppendFormat(out, time.RFC3339Nano)
		out = append(out, `"}`...)
	}
	return append(out, "]}"...)
}

// AppendTxnFailure appends the answer of a transaction that did not commit
// (rolled back, aborted, or of unknown outcome): {"transactionId",
// "success": false, "error", "results": []}. Nothing it did is listed:
// nothing was written.
func AppendTxnFailure(dst []byte, id [16]byte, msg string) []byte {
	out := AppendUUID(append(dst, `{"transactionId":"`...), id)
	out = append(out, `","success":false,"error":`...)
	out = AppendString(out, msg)
	return append(out, `,"results":[]}`...)
}
