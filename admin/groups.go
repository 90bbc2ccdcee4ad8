package admin

import (
	"context"
	"sort"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/pgwire"
)

// Queen's consumer-group routes (docs/admin-groups.md). The
// reads come from pgwire's cursors with their lag (high-water marks and a
// primary-key probe per cursor, no segment scan); deletes and seeks go
// through the consume room, which owns cursors and leases and tells the
// read side and the hot tail; the subscription's start is a pgwire write
// alone (it moves no cursor, so nothing else needs to hear of it).

// lagState is Queen's threshold of a lagging group: its oldest message
// after a cursor is older than this, in seconds.
const lagState = 300

func (a *Admin) groupRoutes() []Route {
	return []Route{
		{Method: "GET", Pattern: "/api/v1/consumer-groups", Serve: a.serveGroups},
		// A literal segment is more specific than a wildcard, so net/http's
		// ServeMux gives lagging this route and every other name the next:
		// a group named lagging cannot be read by GET, as on Queen.
		{Method: "GET", Pattern: "/api/v1/consumer-groups/lagging", Serve: a.serveLagging},
		{Method: "GET", Pattern: "/api/v1/consumer-groups/{group}", Serve: a.serveGroup},
		{Method: "DELETE", Pattern: "/api/v1/consumer-groups/{group}", Admin: true, Serve: a.serveDeleteGroup},
		{Method: "DELETE", Pattern: "/api/v1/consumer-groups/{group}/queues/{queue}", Admin: true, Serve: a.serveDeleteGroup},
		{Method: "POST", Pattern: "/api/v1/consumer-groups/{group}/queues/{queue}/seek", Serve: a.serveSeek},
		{Method: "POST", Pattern: "/api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek", Serve: a.serveSeek},
		{Method: "POST", Pattern: "/api/v1/consumer-groups/{group}/subscription", Serve: a.serveSubscription},
	}
}

func (a *Admin) serveGroups(ctx context.Context, tenant tenancy.TenantID, _ Request) (int, []byte) {
	cs, err := a.cfg.DB.GroupCursors(ctx, tenant, "")
	if err != nil {
		return failed(err)
	}
	var out []GroupSummary
	moved := false
	for i, c := range cs {
		if i == 0 || c.Group != cs[i-1].Group || c.Queue != cs[i-1].Queue {
			out = append(out, GroupSummary{Name: c.Group, Queue: c.Queue, SubscriptionCreatedAt: c.SubCreated})
			moved = false
			switch c.SubMode {
			case "new":
				out[len(out)-1].SubscriptionMode, out[len(out)-1].SubscriptionAt = "new", c.SubAt
			case "from":
				out[len(out)-1].SubscriptionMode, out[len(out)-1].SubscriptionAt = "timestamp", c.SubAt
			}
		}
		g := &out[len(out)-1]
		g.Members++
		if c.Lag > 0 {
			g.PartitionsWithLag++
		}
		g.TotalLag += c.Lag
		g.MaxTimeLag = max(g.MaxTimeLag, c.LagSeconds)
		moved = moved || c.Cursor > c.Start
		switch {
		case g.MaxTimeLag > lagState:
			g.State = "Lagging"
		case moved:
			g.State = "Stable"
		default:
			g.State = "Dead"
		}
	}
	return jsonapi.StatusOK, GroupList(out)
}

func (a *Admin) serveGroup(ctx context.Context, tenant tenancy.TenantID, req Request) (int, []byte) {
	group := req.Path("group")
	if err := jsonapi.CheckName("consumerGroup", group, true); err != nil {
		return jsonapi.StatusBadRequest, jsonapi.AppendError(nil, err.Error())
	}
	cs, err := a.cfg.DB.GroupCursors(ctx, tenant, group)
	if err != nil {
		return failed(err)
	}
	var out []GroupQueue
	for i, c := range cs {
		if i == 0 || c.Queue != cs[i-1].Queue {
			out = append(out, GroupQueue{Queue: c.Queue})
		}
		q := &out[len(out)-1]
		q.Partitions = append(q.Partitions, GroupPartition{Partition: c.Partition, WorkerID: worker(c), LastConsumedAt: lastConsumed(c),
			TotalConsumed: max(c.Cursor-c.Start, 0), OffsetLag: c.Lag, TimeLagSeconds: c.LagSeconds, LeaseActive: c.LeaseLive})
	}
	return jsonapi.StatusOK, GroupDetail(out)
}

func (a *Admin) serveLagging(ctx context.Context, tenant tenancy.TenantID, req Request) (int, []byte) {
	minLag, err := ParseMinLagSeconds(req.Query.Get)
	if err != nil {
		return jsonapi.StatusBadRequest, jsonapi.AppendError(nil, err.Error())
	}
	cs, err := a.cfg.DB.GroupCursors(ctx, tenant, "")
	if err != nil {
		return failed(err)
	}
	var out []LaggingPartition
	for _, c := range cs {
		if c.OldestAt.IsZero() || c.LagSeconds <= minLag {
			continue
		}
		out = append(out, LaggingPartition{Group: c.Group, Queue: c.Queue, Partition: c.Partition, PartitionID: c.PartitionID,
			WorkerID: worker(c), OffsetLag: c.Lag, TimeLagSeconds: c.LagSeconds, OldestUnconsumedAt: c.OldestAt, LastConsumedAt: lastConsumed(c)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].TimeLagSeconds > out[j].TimeLagSeconds })
	return jsonapi.StatusOK, LaggingList(out)
}

// serveDeleteGroup deletes a group on every queue of the tenant, or on the
// path's queue.
func (a *Admin) serveDeleteGroup(ctx context.Context, tenant tenancy.TenantID, req Request) (int, []byte) {
	group, queue := req.Path("group"), req.Path("queue")
	if err := checkGroupPath(group, queue); err != nil {
		return jsonapi.StatusBadRequest, jsonapi.AppendError(nil, err.Error())
	}
	meta := DeleteMetadata(req.Query.Get)
	parts, err := a.cfg.Consumer.DeleteGroup(ctx, tenant, group, queue, meta)
	if err != nil {
		return failed(err)
	}
	return jsonapi.StatusOK, GroupDeleted(group, queue, len(parts), meta)
}

// serveSeek seeks a group on the path's queue (to the body's end or
// time), or on one partition of it (to its end; no body).
func (a *Admin) serveSeek(ctx context.Context, tenant tenancy.TenantID, req Request) (int, []byte) {
	group, queue, partition := req.Path("group"), req.Path("queue"), req.Path("partition")
	if err := checkGroupPath(group, queue); err != nil {
		return jsonapi.StatusBadRequest, jsonapi.AppendError(nil, err.Error())
	}
	if partition != "" {
		if err := jsonapi.CheckName("partition", partition, true); err != nil {
			return jsonapi.StatusBadRequest, jsonapi.AppendError(nil, err.Error())
		}
		parts, err := a.cfg.Consumer.SeekGroup(ctx, pgwire.SeekRequest{Tenant: tenant, Group: group, Queue: queue, Partition: partition, ToEnd: true})
		if err != nil {
			return failed(err)
		}
		if len(parts) == 0 {
			return jsonapi.StatusNotFound, PartitionNotFound()
		}
		return jsonapi.StatusOK, PartitionSeeked(group, queue, partition, parts[0].Cursor)
	}
	to, err := DecodeSeek(req.Body)
	if err != nil {
		return jsonapi.StatusBadRequest, jsonapi.AppendError(nil, err.Error())
	}
	parts, err := a.cfg.Consumer.SeekGroup(ctx, pgwire.SeekRequest{Tenant: tenant, Group: group, Queue: queue, ToEnd: to.ToEnd, At: to.At})
	if err != nil {
		return failed(err)
	}
	return jsonapi.StatusOK, Seeked(group, queue, to, len(parts))
}

func (a *Admin) serveSubscription(ctx context.Context, tenant tenancy.TenantID, req Request) (int, []byte) {
	group := req.Path("group")
	if err := jsonapi.CheckName("consumerGroup", group, true); err != nil {
		return jsonapi.StatusBadRequest, jsonapi.AppendError(nil, err.Error())
	}
	sent, at, err := DecodeSubscription(req.Body)
	if err != nil {
		return jsonapi.StatusBadRequest, jsonapi.AppendError(nil, err.Error())
	}
	n, err := a.cfg.DB.SetSubscriptionStart(ctx, tenant, group, at)
	if err != nil {
		return failed(err)
	}
	return jsonapi.StatusOK, SubscriptionUpdated(group, sent, n)
}

// checkGroupPath checks a group and, when the route has one, a queue.
func checkGroupPath(group, queue string) error {
	if err := jsonapi.CheckName("consumerGroup", group, true); err != nil {
		return err
	}
	if queue == "" {
		return nil
	}
	return jsonapi.CheckName("queue", queue, true)
}

// worker is the live lease's id as Queen's workerId, "" (null) without one.
func worker(c pgwire.GroupCursor) string {
	if !c.LeaseLive {
		return ""
	}
	return string(jsonapi.AppendUUID(nil, c.Lease))
}

// lastConsumed stands in for Queen's last acknowledgement time: when the
// cursor row last changed, once the cursor has moved from where seeding or
// a seek put it.
func lastConsumed(c pgwire.GroupCursor) time.Time {
	if c.Cursor > c.Start {
		return c.UpdatedAt
	}
	return time.Time{}
}
