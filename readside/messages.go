package readside

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/queenbridge/queenbridge/internal/route"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/segment"
	"github.com/queenbridge/queenbridge/storage"
)

// Queen's message routes (docs/admin-messages.md): a message's detail and its delete
// (a tombstone: the log is append-only). The list form shares GET
// /api/v1/messages with section 8's offset read, which the front door
// serves: it hands the list form here (IsMessageList, ServeMessageList).
func (s *Messages) Routes() []route.Route {
	return []route.Route{
		{Method: "GET", Pattern: "/api/v1/messages/{partitionId}/{transactionId}", Serve: s.serveMessage},
		{Method: "DELETE", Pattern: "/api/v1/messages/{partitionId}/{transactionId}", Serve: s.serveDeleteMessage},
	}
}

// partitionID reads a path's partitionId: the partition's id as push
// results and pops give it; anything else names no partition.
func partitionID(s string) (int64, bool) {
	id, err := strconv.ParseInt(s, 10, 64)
	return id, err == nil && id > 0
}

// serveMessage answers a message's detail, its payload as its producer
// sent it; 404 for a message unknown, removed by retention or deleted,
// and for a partitionId that names no partition of the tenant.
func (s *Messages) serveMessage(ctx context.Context, tenant tenancy.TenantID, req route.Request) (int, []byte) {
	txid := req.Path("transactionId")
	pid, ok := partitionID(req.Path("partitionId"))
	if !ok {
		return jsonapi.StatusNotFound, jsonapi.AppendError(nil, ErrMessageNotFound)
	}
	found, ok, err := s.cfg.DB.FindMessage(ctx, tenant, pid, txid)
	if err != nil {
		return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, err.Error())
	}
	if !ok {
		return jsonapi.StatusNotFound, jsonapi.AppendError(nil, ErrMessageNotFound)
	}
	p, m := &found.Partition, &found.Message
	payload, err := s.cfg.Payloads.Plain(tenant, p.Queue, p.Partition, m.Frame.Flags, m.Frame.Payload)
	if err != nil {
		return jsonapi.StatusInternalServerError, jsonapi.AppendError(nil, fmt.Sprintf("message %q: %v", txid, err))
	}
	v := viewOf(p)
	h := head(v, m)
	h.Status, _, h.ConsumedBy = v.status(m.Offset, len(found.DeadLetters) > 0)
	h.Payload, h.Encoded, h.Encrypted = payload, m.Frame.Flags&segment.FlagBase64 != 0, m.Frame.Flags&segment.FlagEncrypted != 0
	if len(found.DeadLetters) > 0 {
		d := found.DeadLetters[0]
		h.HasDeadLetter, h.ErrorMessage, h.RetryCount = true, d.Error, d.RetryCount
	}
	h.LeaseTime, h.RetryLimit, h.RetryDelay, h.TTL = p.Other["leaseTime"], p.Other["retryLimit"], p.Other["retryDelay"], p.Other["ttl"]
	h.Mode = MessageMode{HasQueueMode: v.qm != nil, BusGroups: len(v.bus)}
	for _, g := range p.Groups {
		h.Groups = append(h.Groups, GroupConsumed{Name: g.Group, Consumed: g.Cursor >= m.Offset, LeaseExpires: g.LeaseExpires})
	}
	return jsonapi.StatusOK, AppendMessageDetail(nil, &h)
}

// head is what the list and the detail say of message m of partition v
// alike.
func head(v partView, m *storage.Message) MessageHead {
	h := MessageHead{ID: m.Frame.ID, TransactionID: m.Frame.TransactionID, TraceID: m.Frame.TraceID,
		PartitionID: v.p.ID, Queue: v.p.Queue, Partition: v.p.Partition, Namespace: v.p.Namespace, Task: v.p.Task,
		CreatedAt: m.CreatedAt, TotalGroups: len(v.bus), Priority: v.p.Other["priority"]}
	if v.qm != nil {
		h.LeaseExpires = v.qm.LeaseExpires
	}
	return h
}

// serveDeleteMessage tombstones a message (the Store's DeleteMessage): 200
// with success true, or false and "Message not found" for one unknown,
// removed, deleted already, or named by a partitionId that names no
// partition of the tenant.
func (s *Messages) serveDeleteMessage(ctx context.Context, tenant tenancy.TenantID, req route.Request) (int, []byte) {
	ps, txid := req.Path("partitionId"), req.Path("transactionId")
	deleted := false
	if pid, ok := partitionID(ps); ok {
		var err error
		if deleted, err = s.cfg.DB.DeleteMessage(ctx, tenant, pid, txid); err != nil {
			return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, err.Error())
		}
		if deleted {
			s.tellDeleted(tenant, pid, txid)
		}
	}
	return jsonapi.StatusOK, AppendMessageDeleted(nil, deleted, ps, txid)
}

// ServeMessageList answers the list form of GET /api/v1/messages: the
// tenant's messages created in the query's time range, newest first, with
// their status, without payloads. Counts come from the cursors and dead
// letters; the log is walked newest first from the part of each partition
// the status can come from, and only as far as the page needs.
func (s *Messages) ServeMessageList(ctx context.Context, tenant tenancy.TenantID, q url.Values) (int, []byte) {
	req, err := ParseMessageListQuery(q, time.Now())
	if err != nil {
		return jsonapi.StatusBadRequest, jsonapi.AppendError(nil, err.Error())
	}
	parts, err := s.cfg.DB.MessagePartitions(ctx, tenant, storage.MessageFilter{Queue: req.Queue, Partition: req.Partition,
		Namespace: req.Namespace, Task: req.Task})
	if err != nil {
		return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, err.Error())
	}
	views := make(map[int64]partView, len(parts))
	var mode MessageMode
	buses := map[string]struct{}{}
	for i := range parts {
		v := viewOf(&parts[i])
		views[v.p.ID] = v
		mode.HasQueueMode = mode.HasQueueMode || v.qm != nil
		for _, g := range v.bus {
			buses[g.Group] = struct{}{}
		}
	}
	mode.BusGroups = len(buses)
	want := int64(req.Offset + req.Limit)
	var listed []storage.ListedMessage
	if req.Status == MessageDeadLetter {
		pids := make([]int64, len(parts))
		for i := range parts {
			pids[i] = parts[i].ID
		}
		listed, err = s.cfg.DB.NewestDeadLettered(ctx, pids, req.From, req.To, want)
	} else {
		// What the status leaves out (dead letters) and tombstones make
		// holes: each partition is walked that much further.
		var ranges []storage.OffsetRange
		need := want
		for i := range parts {
			v := views[parts[i].ID]
			lo, hi := v.bounds(req.Status)
			if hi <= lo {
				continue
			}
			slack := v.p.Tombstones
			if req.Status != "" {
				slack += v.p.DeadLetterCount
			}
			ranges = append(ranges, storage.OffsetRange{PartitionID: v.p.ID, Lo: lo, Hi: hi, Need: want + slack})
			need += slack
		}
		if len(ranges) > 0 {
			listed, err = s.cfg.DB.NewestMessages(ctx, ranges, req.From, req.To, need)
		}
	}
	if err != nil {
		return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, err.Error())
	}
	out := make([]MessageHead, 0, len(listed))
	for i := range listed {
		l := &listed[i]
		v := views[l.PartitionID]
		h := head(v, &l.Message)
		h.Status, h.QueueStatus, h.ConsumedBy = v.status(l.Offset, l.DeadLettered)
		if req.Status == "" || h.Status == req.Status {
			out = append(out, h)
		}
	}
	// Newest first; within one commit (one createdAt), by id, as Queen.
	slices.SortFunc(out, func(x, y MessageHead) int {
		if c := y.CreatedAt.Compare(x.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(string(y.ID[:]), string(x.ID[:]))
	})
	out = out[min(req.Offset, len(out)):min(req.Offset+req.Limit, len(out))]
	return jsonapi.StatusOK, AppendMessageList(nil, out, mode)
}
