package jsonapi

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// Queen's Streams SDK (docs/streams.md): POST /streams/v1/queries,
// /streams/v1/state/get and /streams/v1/cycle (and <prefix>.v1.streams.…
// over NATS), snake_case fields as Queen's server reads them. The bodies
// are read with encoding/json into raw members, each then checked here so
// that an error names the field; push items take the push rules.

// StreamQuery is a registration: POST /streams/v1/queries.
type StreamQuery struct {
	Name, Source, Sink, ConfigHash string // Sink "" when none
	Reset                          bool
}

// StreamStateGet reads state rows of one (query, partition).
type StreamStateGet struct {
	QueryID     [16]byte
	PartitionID int64
	Keys        []string
	Prefix      string
	// RipeAtOrBefore: only rows whose value.windowEnd is a number at most
	// this (epoch ms); nil: no bound.
	RipeAtOrBefore *float64
}

// StreamOp is one state operation of a cycle.
type StreamOp struct {
	Delete bool
	Key    string
	Value  []byte // an upsert's JSON value (a sub-slice of the body)
}

// StreamAck is a cycle's source acknowledgement.
type StreamAck struct {
	TransactionID string
	Lease         *[16]byte
	Status        string // completed or dlq (success and failed as sent are these)
	Error         string
	Count         int // the messages the acknowledgement covers, as the SDK says; 0 when not sent
}

// StreamCycle is one cycle: POST /streams/v1/cycle.
type StreamCycle struct {
	QueryID     [16]byte
	PartitionID int64
	Group       string // QueueModeGroup when not sent
	Ops         []StreamOp
	Items       []Item
	Ack         *StreamAck
	Release     bool // release_lease, true when not sent
}

// streamMembers reads a body that must be a JSON object into its raw
// members.
func streamMembers(body []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, notJSON(err)
	}
	if m == nil {
		return nil, Badf("body must be a JSON object")
	}
	return m, nil
}

func present(raw json.RawMessage) bool { return raw != nil && string(raw) != "null" }

// streamString reads an optional string member ("" when absent or null).
func streamString(m map[string]json.RawMessage, name string) (string, error) {
	raw := m[name]
	if !present(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", Badf("%s must be a string", name)
	}
	return s, nil
}

// streamRequired reads a required non-empty string member.
func streamRequired(m map[string]json.RawMessage, name string) (string, error) {
	s, err := streamString(m, name)
	if err == nil && s == "" {
		err = Badf("%s is required (a non-empty string)", name)
	}
	return s, err
}

func streamBool(m map[string]json.RawMessage, name string, def bool) (bool, error) {
	raw := m[name]
	if !present(raw) {
		return def, nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return false, Badf("%s must be true or false", name)
	}
	return b, nil
}

// DecodeStreamQuery reads a registration: name, source_queue and
// config_hash required, sink_queue optional, reset false by default. The
// queue names take the name rules.
func DecodeStreamQuery(body []byte) (StreamQuery, error) {
	m, err := streamMembers(body)
	if err != nil {
		return StreamQuery{}, err
	}
	var q StreamQuery
	for _, f := range []struct {
		name string
		dst  *string
		req  bool
	}{{"name", &q.Name, true}, {"source_queue", &q.Source, true}, {"config_hash", &q.ConfigHash, true}, {"sink_queue", &q.Sink, false}} {
		read := streamString
		if f.req {
			read = streamRequired
		}
		if *f.dst, err = read(m, f.name); err != nil {
			return StreamQuery{}, err
		}
	}
	if err := CheckName("source_queue", q.Source, true); err != nil {
		return StreamQuery{}, err
	}
	if q.Sink != "" {
		if err := CheckName("sink_queue", q.Sink, true); err != nil {
			return StreamQuery{}, err
		}
	}
	if err := CheckName("name", q.Name, true); err != nil {
		return StreamQuery{}, err
	}
	q.Reset, err = streamBool(m, "reset", false)
	return q, err
}

// streamTarget reads query_id (a UUID) and partition_id (a partition id,
// a string of digits or a number), both required.
func streamTarget(m map[string]json.RawMessage) (id [16]byte, pid int64, err error) {
	s, err := streamRequired(m, "query_id")
	if err != nil {
		return id, 0, err
	}
	if id, err = ParseUUID(s); err != nil {
		return id, 0, Badf("query_id must be a UUID, got %q", s)
	}
	if !present(m["partition_id"]) {
		return id, 0, Badf("partition_id is required")
	}
	if pid, err = partitionID(m["partition_id"]); err != nil {
		return id, 0, Badf("partition_id %s", err)
	}
	return id, pid, nil
}

// DecodeStreamStateGet reads a state read: query_id and partition_id
// required; keys (an array of strings; empty: every key), key_prefix and
// ripe_at_or_before (a number, epoch ms) optional.
func DecodeStreamStateGet(body []byte) (StreamStateGet, error) {
	m, err := streamMembers(body)
	if err != nil {
		return StreamStateGet{}, err
	}
	var g StreamStateGet
	if g.QueryID, g.PartitionID, err = streamTarget(m); err != nil {
		return StreamStateGet{}, err
	}
	if present(m["keys"]) {
		if err := json.Unmarshal(m["keys"], &g.Keys); err != nil {
			return StreamStateGet{}, Badf("keys must be an array of strings")
		}
	}
	if g.Prefix, err = streamString(m, "key_prefix"); err != nil {
		return StreamStateGet{}, err
	}
	if raw := m["ripe_at_or_before"]; present(raw) {
		var ms float64
		if err := json.Unmarshal(raw, &ms); err != nil {
			return StreamStateGet{}, Badf("ripe_at_or_before must be a number (epoch milliseconds)")
		}
		g.RipeAtOrBefore = &ms
	}
	return g, nil
}

// DecodeStreamCycle reads a cycle: query_id and partition_id required;
// consumer_group (default the queue mode's), state_ops, push_items (push
// items, the push rules), ack (null or an object with transactionId),
// release_lease (default true). Every part is checked before any is
// returned.
func DecodeStreamCycle(body []byte) (StreamCycle, error) {
	m, err := streamMembers(body)
	if err != nil {
		return StreamCycle{}, err
	}
	c := StreamCycle{Group: QueueModeGroup}
	if c.QueryID, c.PartitionID, err = streamTarget(m); err != nil {
		return StreamCycle{}, err
	}
	if g, err := streamString(m, "consumer_group"); err != nil {
		return StreamCycle{}, err
	} else if g != "" {
		c.Group = g
	}
	if err := CheckName("consumer_group", c.Group, true); err != nil {
		return StreamCycle{}, err
	}
	if c.Release, err = streamBool(m, "release_lease", true); err != nil {
		return StreamCycle{}, err
	}
	if c.Ops, err = streamOps(m["state_ops"]); err != nil {
		return StreamCycle{}, err
	}
	if raw := m["push_items"]; present(raw) {
		if c.Items, err = decodeItemList(raw, "push_items", "push_items", 0); err != nil {
			return StreamCycle{}, err
		}
	}
	if raw := m["ack"]; present(raw) {
		if c.Ack, err = streamAck(raw); err != nil {
			return StreamCycle{}, err
		}
	}
	return c, nil
}

// streamOps reads state_ops: {"type":"upsert","key","value"} and
// {"type":"delete","key"}; a key is a non-empty string.
func streamOps(raw json.RawMessage) ([]StreamOp, error) {
	if !present(raw) {
		return nil, nil
	}
	var list []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, Badf("state_ops must be an array of objects")
	}
	ops := make([]StreamOp, len(list))
	for i, m := range list {
		label := "state_ops[" + strconv.Itoa(i) + "]"
		if m == nil {
			return nil, Badf("%s must be an object", label)
		}
		typ, err := streamString(m, "type")
		if err != nil {
			return nil, Badf("%s.type must be a string", label)
		}
		key, err := streamString(m, "key")
		if err != nil || key == "" {
			return nil, Badf("%s.key is required (a non-empty string)", label)
		}
		switch typ {
		case "upsert":
			v := bytes.TrimSpace(m["value"])
			if v == nil {
				v = nullPayload
			}
			ops[i] = StreamOp{Key: key, Value: v}
		case "delete":
			ops[i] = StreamOp{Delete: true, Key: key}
		default:
			return nil, Badf("%s: unknown state op type %q (upsert or delete)", label, typ)
		}
	}
	return ops, nil
}

// streamAck reads ack: transactionId required; leaseId a UUID; status
// completed (default) or success, failed or dlq (a dead letter); error;
// count.
func streamAck(raw json.RawMessage) (*StreamAck, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, Badf("ack must be null or an object")
	}
	a := &StreamAck{}
	var err error
	if a.TransactionID, err = streamRequired(m, "transactionId"); err != nil {
		return nil, Badf("ack.%s", err)
	}
	lease, err := streamString(m, "leaseId")
	if err != nil {
		return nil, Badf("ack.%s", err)
	}
	if lease != "" {
		id, err := ParseUUID(lease)
		if err != nil {
			return nil, Badf("ack.leaseId must be a UUID, got %q", lease)
		}
		a.Lease = &id
	}
	status, err := streamString(m, "status")
	if err != nil {
		return nil, Badf("ack.%s", err)
	}
	switch status {
	case "", "completed", "success":
		a.Status = "completed"
	case "failed", "dlq":
		a.Status = "dlq"
	default:
		return nil, Badf("ack.status must be completed, success, failed or dlq, got %q", status)
	}
	if a.Error, err = streamString(m, "error"); err != nil {
		return nil, Badf("ack.%s", err)
	}
	if raw := m["count"]; present(raw) {
		if err := json.Unmarshal(raw, &a.Count); err != nil || a.Count < 0 {
			return nil, Badf("ack.count must be a non-negative integer")
		}
	}
	return a, nil
}

// StreamRegistered is what a registration did (AppendStreamRegistered).
type StreamRegistered struct {
	ID               [16]byte
	Name, ConfigHash string
	Fresh, Reset     bool
}

// AppendStreamRegistered is the answer of a registration:
// {"success":true,"query_id","name","config_hash","fresh","reset"}.
func AppendStreamRegistered(out []byte, r StreamRegistered) []byte {
	out = append(out, `{"success":true,"query_id":"`...)
	out = AppendUUID(out, r.ID)
	out = append(out, `","name":`...)
	out = AppendString(out, r.Name)
	out = append(out, `,"config_hash":`...)
	out = AppendString(out, r.ConfigHash)
	out = append(out, `,"fresh":`...)
	out = strconv.AppendBool(out, r.Fresh)
	out = append(out, `,"reset":`...)
	out = strconv.AppendBool(out, r.Reset)
	return append(out, '}')
}

// AppendStreamConflict appends the 409 body of a registration whose
// config_hash differs from the stored one:
// {"success":false,"query_id","name","error"}.
func AppendStreamConflict(out []byte, id [16]byte, name, stored, sent string) []byte {
	out = append(out, `{"success":false,"query_id":"`...)
	out = AppendUUID(out, id)
	out = append(out, `","name":`...)
	out = AppendString(out, name)
	out = append(out, `,"error":`...)
	out = AppendString(out, "config_hash mismatch: query "+strconv.Quote(name)+" is registered with config_hash "+strconv.Quote(stored)+
		", not "+strconv.Quote(sent)+"; register with reset: true to drop its state and take the new one")
	return append(out, '}')
}

// StreamRow is one state row of a state read's answer.
type StreamRow struct {
	Key       string
	Value     []byte // JSON
	UpdatedAt time.Time
}

// AppendStreamRows is the answer of a state read:
// {"success":true,"rows":[{"key","value","updated_at"}, ...]}.
func AppendStreamRows(out []byte, rows []StreamRow) []byte {
	out = append(out, `{"success":true,"rows":[`...)
	for i, r := range rows {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"key":`...)
		out = AppendString(out, r.Key)
		out = append(out, `,"value":`...)
		out = append(out, r.Value...)
		out = append(out, `,"updated_at":"`...)
		out = r.UpdatedAt.UTC().AppendFormat(out, time.RFC3339Nano)
		out = append(out, `"}`...)
	}
	return append(out, "]}"...)
}

// StreamCycleAnswer is a committed cycle's answer (AppendStreamCycle).
type StreamCycleAnswer struct {
	QueryID     [16]byte
	PartitionID int64
	Queue       string // the source queue ("" when the cycle had no acknowledgement)
	Ops         int
	// Pushes: one result per push item, in request order, with its
	// transactionId, queue and partition.
	Pushes        []Result
	Items         []Item
	TxIDs         []string
	Ack           *StreamAck // nil: none
	Released, DLQ bool
}

// AppendStreamCycle is a committed cycle's answer:
// {"success":true,"query_id","partition_id","queueName","state_ops_applied",
// "push_results":[as push answers],"ack_result":null or {"success":true,
// "count","lease_released","dlq"}}.
func AppendStreamCycle(out []byte, a *StreamCycleAnswer) []byte {
	out = streamHead(out, true, a.QueryID, a.PartitionID)
	out = append(out, `,"queueName":`...)
	out = AppendString(out, a.Queue)
	out = append(out, `,"state_ops_applied":`...)
	out = strconv.AppendInt(out, int64(a.Ops), 10)
	out = append(out, `,"push_results":[`...)
	for i := range a.Pushes {
		if i > 0 {
			out = append(out, ',')
		}
		out = AppendResult(out, i, &a.Pushes[i], a.TxIDs[i], a.Items[i].TraceID, a.Items[i].Queue, a.Items[i].Partition)
	}
	out = append(out, `],"ack_result":`...)
	if a.Ack == nil {
		return append(out, "null}"...)
	}
	count := a.Ack.Count
	if count == 0 {
		count = 1
	}
	out = append(out, `{"success":true,"count":`...)
	out = strconv.AppendInt(out, int64(count), 10)
	out = append(out, `,"lease_released":`...)
	out = strconv.AppendBool(out, a.Released)
	out = append(out, `,"dlq":`...)
	out = strconv.AppendBool(out, a.DLQ)
	return append(out, "}}"...)
}

// AppendStreamCycleFailure appends the answer of a cycle that did not
// commit: {"success":false,"query_id","partition_id","error"}.
func AppendStreamCycleFailure(out []byte, id [16]byte, pid int64, msg string) []byte {
	out = streamHead(out, false, id, pid)
	out = append(out, `,"error":`...)
	out = AppendString(out, msg)
	return append(out, '}')
}

func streamHead(out []byte, ok bool, id [16]byte, pid int64) []byte {
	out = append(out, `{"success":`...)
	out = strconv.AppendBool(out, ok)
	out = append(out, `,"query_id":"`...)
	out = AppendUUID(out, id)
	out = append(out, `","partition_id":"`...)
	out = strconv.AppendInt(out, pid, 10)
	return append(out, '"')
}
