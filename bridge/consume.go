package bridge

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/micro"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/readside"
	"github.com/queenbridge/queenbridge/segment"
)

// Queen's consumer API (SPEC section 11): pop, ack, lease extension and
// the dead letters, over HTTP and NATS. The read side claims partitions and
// parks pops; this file decodes, checks, decrypts and renders.

// pop runs a validated pop; 204 (no body) when nothing was delivered.
func (b *Bridge) pop(ctx context.Context, tenant [16]byte, req jsonapi.PopRequest) (int, []byte) {
	return b.popWithin(ctx, tenant, req, 0)
}

// natsPopBound is the bound of a pop's answer over NATS: the connection's
// largest message, less room for the headers.
func (b *Bridge) natsPopBound() int64 {
	return max(b.cfg.NATS.MaxPayload()-16<<10, 64<<10)
}

// popWithin is pop with the answer bounded to maxBytes (0: unbounded).
func (b *Bridge) popWithin(ctx context.Context, tenant [16]byte, req jsonapi.PopRequest, maxBytes int64) (int, []byte) {
	if err := req.Validate(); err != nil {
		return http.StatusBadRequest, jsonapi.ErrorBody(err.Error())
	}
	if b.keeper.Maintenance() {
		return http.StatusNoContent, nil
	}
	var wait time.Duration
	if req.Wait {
		wait = time.Duration(req.TimeoutMs) * time.Millisecond
	}
	got, err := b.reads.Pop(ctx, tenant, readside.PopRequest{Queue: req.Queue, Partition: req.Partition, Group: req.ConsumerGroup,
		Batch: req.Batch, Partitions: req.Partitions, AutoAck: req.AutoAck, SubscriptionMode: req.SubscriptionMode,
		SubscriptionFrom: req.From, Wait: wait, MaxBytes: maxBytes})
	if err != nil && len(got.Parts) == 0 {
		return http.StatusServiceUnavailable, jsonapi.ErrorBody(err.Error())
	}
	n := 0
	for _, p := range got.Parts {
		n += len(p.Messages)
	}
	b.metrics.Popped(n)
	if n == 0 {
		return http.StatusNoContent, nil
	}
	lease := ""
	if !req.AutoAck {
		lease = string(jsonapi.AppendUUID(nil, got.Lease))
	}
	first := got.Parts[0]
	out := make([]byte, 0, 256+n*320)
	out = append(out, `{"success":true,"queue":`...)
	out = jsonapi.AppendString(out, req.Queue)
	out = append(out, `,"partition":`...)
	out = jsonapi.AppendString(out, first.Partition)
	out = append(out, `,"partitionId":"`...)
	out = strconv.AppendInt(out, first.PartitionID, 10)
	out = append(out, `","leaseId":`...)
	out = jsonapi.AppendString(out, lease)
	out = append(out, `,"consumerGroup":`...)
	out = jsonapi.AppendString(out, req.ConsumerGroup)
	out = append(out, `,"partitionsClaimed":`...)
	out = strconv.AppendInt(out, int64(len(got.Parts)), 10)
	out = append(out, `,"messages":[`...)
	k := 0
	for _, p := range got.Parts {
		for i := range p.Messages {
			m := &p.Messages[i]
			payload := m.Frame.Payload
			if m.Frame.Flags&segment.FlagEncrypted != 0 {
				if !b.queues.HasKey() {
					return http.StatusInternalServerError, jsonapi.ErrorBody(fmt.Sprintf("queue %q holds encrypted messages and no QUEEN_ENCRYPTION_KEY is configured", req.Queue))
				}
				plain, err := b.queues.Open(tenant, req.Queue, p.Partition, m.Frame.Flags, payload)
				if err != nil {
					return http.StatusInternalServerError, jsonapi.ErrorBody(fmt.Sprintf("message at offset %d of partition %s: %v", m.Offset, p.Partition, err))
				}
				payload = plain
			}
			if k > 0 {
				out = append(out, ',')
			}
			k++
			out = jsonapi.AppendPopped(out, &jsonapi.PoppedMessage{ID: m.Frame.ID, TransactionID: m.Frame.TransactionID, TraceID: m.Frame.TraceID,
				Payload: payload, Encoded: m.Frame.Flags&segment.FlagBase64 != 0, CreatedAt: m.CreatedAt, PartitionID: p.PartitionID, Partition: p.Partition},
				lease, req.ConsumerGroup)
		}
	}
	return http.StatusOK, append(out, `]}`...)
}

// ack applies acknowledgements: grouped by (partition, group, lease), each
// group one call in ascending partition id, answered in input order.
func (b *Bridge) ack(ctx context.Context, tenant [16]byte, body []byte, batch bool) (int, []byte) {
	acks, err := jsonapi.DecodeAck(body, batch)
	if err != nil {
		return http.StatusBadRequest, jsonapi.ErrorBody(err.Error())
	}
	type groupKey struct {
		pid   int64
		group string
		lease [16]byte
		has   bool
	}
	byGroup := map[groupKey][]int{}
	var keys []groupKey
	for i, a := range acks {
		k := groupKey{pid: a.PartitionID, group: a.ConsumerGroup}
		if a.Lease != nil {
			k.lease, k.has = *a.Lease, true
		}
		if _, ok := byGroup[k]; !ok {
			keys = append(keys, k)
		}
		byGroup[k] = append(byGroup[k], i)
	}
	slices.SortFunc(keys, func(x, y groupKey) int {
		if c := cmp.Compare(x.pid, y.pid); c != 0 {
			return c
		}
		return cmp.Compare(x.group, y.group)
	})
	results := make([]jsonapi.AckResult, len(acks))
	for _, k := range keys {
		idx := byGroup[k]
		items := make([]pgwire.AckItem, len(idx))
		again := false
		for j, i := range idx {
			items[j] = pgwire.AckItem{TransactionID: acks[i].TransactionID, Status: acks[i].Status, Error: acks[i].Error}
			again = again || acks[i].Status == "failed" || acks[i].Status == "retry"
		}
		var lease *[16]byte
		if k.has {
			lease = &k.lease
		}
		res, err := b.reads.Ack(ctx, tenant, k.pid, k.group, lease, items, again)
		for j, i := range idx {
			r := jsonapi.AckResult{TransactionID: acks[i].TransactionID, Queue: res.Queue, Partition: res.Partition, LeaseReleased: res.Released}
			switch {
			case err != nil:
				r.Error = err.Error()
			case res.Errs[j] != "":
				r.Error = res.Errs[j]
			default:
				r.DLQ = res.DLQ[j]
			}
			results[i] = r
			b.metrics.Acked(acks[i].Status, r.Error == "", r.DLQ)
		}
	}
	out := make([]byte, 0, 32+len(acks)*200)
	out = append(out, '[')
	for i := range results {
		if i > 0 {
			out = append(out, ',')
		}
		out = jsonapi.AppendAckResult(out, i, &results[i])
	}
	return http.StatusOK, append(out, ']')
}

// extend extends a lease: {"seconds"} (60).
func (b *Bridge) extend(ctx context.Context, tenant [16]byte, leaseID string, body []byte) (int, []byte) {
	lease, err := jsonapi.ParseUUID(leaseID)
	if err != nil {
		return http.StatusBadRequest, jsonapi.ErrorBody("leaseId must be a UUID, got " + strconv.Quote(leaseID))
	}
	var req struct {
		Seconds *int `json:"seconds"`
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			return http.StatusBadRequest, jsonapi.ErrorBody("body is not JSON: " + err.Error())
		}
	}
	seconds := 60
	if req.Seconds != nil {
		seconds = *req.Seconds
	}
	if seconds < 1 || seconds > 86400 {
		return http.StatusBadRequest, jsonapi.ErrorBody(fmt.Sprintf("seconds must be 1..86400, got %d", seconds))
	}
	at, ok, err := b.cfg.DB.ExtendLease(ctx, tenant, lease, seconds)
	if err != nil {
		return http.StatusServiceUnavailable, jsonapi.ErrorBody(err.Error())
	}
	out := []byte(`[{"index":0,"leaseId":`)
	out = jsonapi.AppendString(out, leaseID)
	if !ok {
		out = append(out, `,"success":false,"error":"lease not found or expired","expiresAt":null}]`...)
		return http.StatusOK, out
	}
	out = append(out, `,"success":true,"error":null,"expiresAt":"`...)
	out = at.UTC().AppendFormat(out, time.RFC3339Nano)
	return http.StatusOK, append(out, `"}]`...)
}

// dlqRequest is GET /api/v1/dlq's query, or the body of <prefix>.v1.dlq.
type dlqRequest struct {
	Queue         string `json:"queue"`
	ConsumerGroup string `json:"consumerGroup"`
	Limit         int    `json:"limit"`
	Offset        int    `json:"offset"`
}

// dlq lists a queue's dead letters.
func (b *Bridge) dlq(ctx context.Context, tenant [16]byte, req dlqRequest) (int, []byte) {
	if err := jsonapi.CheckName("queue", req.Queue, req.Queue != ""); err != nil {
		return http.StatusBadRequest, jsonapi.ErrorBody(err.Error())
	}
	if req.Limit == 0 {
		req.Limit = 100
	}
	if req.Limit < 1 || req.Limit > 1000 || req.Offset < 0 {
		return http.StatusBadRequest, jsonapi.ErrorBody(fmt.Sprintf("limit must be 1..1000 and offset at least 0, got %d and %d", req.Limit, req.Offset))
	}
	dls, total, err := b.cfg.DB.DeadLetters(ctx, tenant, req.Queue, req.ConsumerGroup, req.Limit, req.Offset)
	if err != nil {
		return http.StatusServiceUnavailable, jsonapi.ErrorBody(err.Error())
	}
	out := []byte(`{"messages":[`)
	for i, d := range dls {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"id":`...)
		if d.Found {
			out = append(out, '"')
			out = jsonapi.AppendUUID(out, d.Message.Frame.ID)
			out = append(out, '"')
		} else {
			out = append(out, `null`...)
		}
		out = append(out, `,"transactionId":`...)
		out = jsonapi.AppendString(out, d.TransactionID)
		out = append(out, `,"partitionId":"`...)
		out = strconv.AppendInt(out, d.PartitionID, 10)
		out = append(out, `","queue":`...)
		out = jsonapi.AppendString(out, d.Queue)
		out = append(out, `,"partition":`...)
		out = jsonapi.AppendString(out, d.Partition)
		out = append(out, `,"consumerGroup":`...)
		out = jsonapi.AppendString(out, d.Group)
		out = append(out, `,"errorMessage":`...)
		out = jsonapi.AppendString(out, d.Error)
		out = append(out, `,"retryCount":`...)
		out = strconv.AppendInt(out, int64(d.RetryCount), 10)
		out = append(out, `,"offset":`...)
		out = strconv.AppendInt(out, d.Offset, 10)
		out = append(out, `,"data":`...)
		switch {
		case !d.Found:
			out = append(out, `null`...)
		case d.Message.Frame.Flags&segment.FlagEncrypted != 0:
			plain, err := b.queues.Open(tenant, d.Queue, d.Partition, d.Message.Frame.Flags, d.Message.Frame.Payload)
			if err != nil {
				return http.StatusInternalServerError, jsonapi.ErrorBody(fmt.Sprintf("dead letter %d: %v", d.ID, err))
			}
			out = append(out, plain...)
		default:
			out = append(out, d.Message.Frame.Payload...)
		}
		if d.Found && d.Message.Frame.Flags&segment.FlagBase64 != 0 {
			out = append(out, `,"encoding":"base64"`...)
		}
		out = append(out, `,"createdAt":`...)
		if d.Found {
			out = append(out, '"')
			out = d.Message.CreatedAt.UTC().AppendFormat(out, time.RFC3339Nano)
			out = append(out, '"')
		} else {
			out = append(out, `null`...)
		}
		out = append(out, `,"failedAt":"`...)
		out = d.FailedAt.UTC().AppendFormat(out, time.RFC3339Nano)
		out = append(out, `"}`...)
	}
	out = append(out, `],"pagination":{"limit":`...)
	out = strconv.AppendInt(out, int64(req.Limit), 10)
	out = append(out, `,"offset":`...)
	out = strconv.AppendInt(out, int64(req.Offset), 10)
	out = append(out, `,"total":`...)
	out = strconv.AppendInt(out, total, 10)
	return http.StatusOK, append(out, `}}`...)
}

// HTTP routes.

func (b *Bridge) httpPop(w http.ResponseWriter, r *http.Request, tenant [16]byte) {
	req, err := jsonapi.ParsePopQuery(r.URL.Query().Get)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, jsonapi.ErrorBody(err.Error()))
		return
	}
	req.Queue, req.Partition = r.PathValue("queue"), r.PathValue("partition")
	if req.Wait { // a pop that may park takes a slot, as a parked read does
		if !b.takeParkSlot(w) {
			return
		}
		defer b.releaseParkSlot()
	}
	status, out := b.pop(r.Context(), tenant, req)
	writeAnswer(w, status, out)
}

// writeAnswer writes a JSON answer, or 204 with no body.
func writeAnswer(w http.ResponseWriter, status int, out []byte) {
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	writeJSON(w, status, out)
}

func (b *Bridge) httpAck(batch bool) tenantHandler {
	return func(w http.ResponseWriter, r *http.Request, tenant [16]byte) {
		body, done, ok := b.body(w, r)
		if !ok {
			return
		}
		defer done()
		status, out := b.ack(r.Context(), tenant, body, batch)
		writeJSON(w, status, out)
	}
}

func (b *Bridge) httpExtend(w http.ResponseWriter, r *http.Request, tenant [16]byte) {
	body, done, ok := b.body(w, r)
	if !ok {
		return
	}
	defer done()
	status, out := b.extend(r.Context(), tenant, r.PathValue("leaseId"), body)
	writeJSON(w, status, out)
}

func (b *Bridge) httpDLQ(w http.ResponseWriter, r *http.Request, tenant [16]byte) {
	q := r.URL.Query()
	req := dlqRequest{Queue: q.Get("queue"), ConsumerGroup: q.Get("consumerGroup")}
	for _, p := range []struct {
		name string
		dst  *int
	}{{"limit", &req.Limit}, {"offset", &req.Offset}} {
		if v := q.Get(p.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				writeJSON(w, http.StatusBadRequest, jsonapi.ErrorBody(p.name+" must be an integer"))
				return
			}
			*p.dst = n
		}
	}
	status, out := b.dlq(r.Context(), tenant, req)
	writeJSON(w, status, out)
}

// NATS endpoints: <prefix>.v1.pop (the pop's fields as JSON, queue and
// partition among them), <prefix>.v1.ack ({"acknowledgments": [...]} or
// one acknowledgement), <prefix>.v1.lease ({"leaseId", "seconds"}),
// <prefix>.v1.dlq (the dlq query as JSON). 204 is answered as an empty
// body without error headers.

func (b *Bridge) natsPop(req micro.Request) {
	bound := b.natsPopBound()
	natsParkable(b, req, "pop", func(ctx context.Context, tenant [16]byte, pr jsonapi.PopRequest) (int, []byte) {
		return b.popWithin(ctx, tenant, pr, bound)
	})
}

// natsAck takes a body with "acknowledgments" as a batch, anything else as
// one acknowledgement.
func (b *Bridge) natsAck(req micro.Request) {
	b.natsWorker(req, func(ctx context.Context, tenant [16]byte) (int, []byte) {
		var probe struct {
			Acks json.RawMessage `json:"acknowledgments"`
		}
		_ = json.Unmarshal(req.Data(), &probe)
		return b.ack(ctx, tenant, req.Data(), probe.Acks != nil)
	})
}

func (b *Bridge) natsLease(req micro.Request) {
	b.natsWorker(req, func(ctx context.Context, tenant [16]byte) (int, []byte) {
		var lr struct {
			LeaseID string `json:"leaseId"`
		}
		if err := json.Unmarshal(req.Data(), &lr); err != nil {
			return http.StatusBadRequest, jsonapi.ErrorBody("lease body: " + err.Error())
		}
		return b.extend(ctx, tenant, lr.LeaseID, req.Data())
	})
}

func (b *Bridge) natsDLQ(req micro.Request) {
	b.natsWorker(req, func(ctx context.Context, tenant [16]byte) (int, []byte) {
		var dr dlqRequest
		if err := json.Unmarshal(req.Data(), &dr); err != nil {
			return http.StatusBadRequest, jsonapi.ErrorBody("dlq body: " + err.Error())
		}
		return b.dlq(ctx, tenant, dr)
	})
}

// natsWorker runs a request that waits on the database on the worker pool.
func (b *Bridge) natsWorker(req micro.Request, fn func(context.Context, [16]byte) (int, []byte)) {
	tenant, status, err := b.natsTenant(req, false)
	if err != nil {
		respondNATS(b.cfg.NATS, req, status, jsonapi.ErrorBody(err.Error()))
		return
	}
	b.enqueue(req, func() {
		defer b.calls.Done()
		status, out := fn(context.Background(), tenant)
		respondNATS(b.cfg.NATS, req, status, out)
	})
}
