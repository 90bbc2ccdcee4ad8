package admin

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/pgwire"
)

// The dashboard's status routes and the maintenance switches (docs/admin.md, "Status and maintenance").
// Every number of the status answers is (opt): counts as the resource
// routes compute them; throughput [] and workers [] (the bridge keeps no
// rates over time and no list of its peers here); errors from this
// bridge's own counters.

func (a *Admin) statusRoutes() []Route {
	return []Route{
		{Method: "GET", Pattern: "/api/v1/status", Serve: a.status},
		{Method: "GET", Pattern: "/api/v1/status/queues", Serve: a.statusQueues},
		{Method: "GET", Pattern: "/api/v1/status/queues/{queue}", Serve: a.statusQueue},
		{Method: "GET", Pattern: "/api/v1/system/maintenance", Admin: true, Serve: a.getMaintenance},
		{Method: "POST", Pattern: "/api/v1/system/maintenance", Admin: true, Serve: a.setMaintenance},
		{Method: "GET", Pattern: "/api/v1/system/maintenance/pop", Admin: true, Serve: a.getPopMaintenance},
		{Method: "POST", Pattern: "/api/v1/system/maintenance/pop", Admin: true, Serve: a.setPopMaintenance},
	}
}

func (a *Admin) getMaintenance(ctx context.Context, _ tenancy.TenantID, _ Request) (int, []byte) {
	return a.cfg.Keeper.ServeMaintenance(ctx, nil)
}

// setMaintenance needs {"enabled": bool}, as Queen does (over NATS, {}
// reads).
func (a *Admin) setMaintenance(ctx context.Context, _ tenancy.TenantID, req Request) (int, []byte) {
	return setSwitch(ctx, req, a.cfg.Keeper.ServeMaintenance)
}

func (a *Admin) getPopMaintenance(ctx context.Context, _ tenancy.TenantID, _ Request) (int, []byte) {
	return a.cfg.Keeper.ServePopMaintenance(ctx, nil)
}

func (a *Admin) setPopMaintenance(ctx context.Context, _ tenancy.TenantID, req Request) (int, []byte) {
	return setSwitch(ctx, req, a.cfg.Keeper.ServePopMaintenance)
}

// setSwitch hands the value a switch body sets to serve; a body that does
// not decode is answered 400 here, and serve never sees it.
func setSwitch(ctx context.Context, req Request, serve func(context.Context, *bool) (int, []byte)) (int, []byte) {
	on, err := jsonapi.DecodeSwitch(req.Body)
	if err != nil {
		return jsonapi.StatusBadRequest, jsonapi.AppendError(nil, err.Error())
	}
	return serve(ctx, &on)
}

func (a *Admin) status(ctx context.Context, tenant tenancy.TenantID, req Request) (int, []byte) {
	sr, err := ParseStatusQuery(req.Query.Get, time.Now())
	if err != nil {
		return jsonapi.StatusBadRequest, jsonapi.AppendError(nil, err.Error())
	}
	f := pgwire.QueueFilter{Name: sr.Queue, Namespace: sr.Namespace, Task: sr.Task}
	qs, err := a.cfg.DB.QueueStats(ctx, tenant, f)
	if err != nil {
		return failed(err)
	}
	top, err := a.cfg.DB.TopDeadLetterErrors(ctx, tenant, f, 10)
	if err != nil {
		return failed(err)
	}
	out := Status{
		TimeRange:       StatusTimeRange{From: StatTime(sr.From), To: StatTime(sr.To)},
		BucketMinutes:   BucketMinutes(sr.To.Sub(sr.From)),
		Throughput:      []json.RawMessage{},
		Queues:          make([]StatusQueue, 0, len(qs)),
		Messages:        StatusMessages{BatchEfficiency: json.RawMessage(`{}`)},
		Workers:         []json.RawMessage{},
		DeadLetterQueue: StatusDeadLetters{TopErrors: make([]StatusErrorCount, 0, len(top))},
		Errors:          StatusErrors{DBErrors: int64(a.cfg.DB.Stats().StatementTimeouts)},
	}
	for _, q := range qs {
		out.Queues = append(out.Queues, StatusQueue{ID: id(q.ID), Name: q.Name, Namespace: q.Namespace, Task: q.Task,
			Partitions: q.Partitions, TotalConsumed: q.Counts.Completed})
		out.Messages.SixCounts = addSix(out.Messages.SixCounts, sixCounts(q.Counts))
		out.Leases.Active += q.Leases.Active
		out.Leases.PartitionsWithLeases += q.LeasedPartitions
		out.Leases.TotalBatchSize += q.Leases.Delivered
		out.Leases.TotalAcked += q.Leases.Acked
		out.DeadLetterQueue.TotalMessages += q.Counts.DeadLetter
		out.DeadLetterQueue.AffectedPartitions += q.DeadPartitions
	}
	out.Errors.DLQMessages = out.DeadLetterQueue.TotalMessages
	for _, e := range top {
		out.DeadLetterQueue.TopErrors = append(out.DeadLetterQueue.TopErrors, StatusErrorCount{Error: e.Error, Count: e.Count})
	}
	return jsonapi.StatusOK, jsonapi.AppendResource(nil, out)
}

func (a *Admin) statusQueues(ctx context.Context, tenant tenancy.TenantID, req Request) (int, []byte) {
	r, err := ParseQueueStatsQuery(req.Query.Get)
	if err != nil {
		return jsonapi.StatusBadRequest, jsonapi.AppendError(nil, err.Error())
	}
	qs, err := a.cfg.DB.QueueStats(ctx, tenant, pgwire.QueueFilter{Namespace: r.Namespace, Task: r.Task, Limit: r.Limit, Offset: r.Offset})
	if err != nil {
		return failed(err)
	}
	out := QueueStatsPage{Queues: make([]QueueSummary, 0, len(qs)), Pagination: PageBounds{Limit: r.Limit, Offset: r.Offset}}
	for _, q := range qs {
		out.Queues = append(out.Queues, summary(q))
	}
	return jsonapi.StatusOK, jsonapi.AppendResource(nil, out)
}

// option is a queue option as stored, else null.
func option(opts map[string]json.RawMessage, name string) json.RawMessage {
	if v, ok := opts[name]; ok {
		return v
	}
	return json.RawMessage("null")
}

// actedOption is an option the bridge acts on, as stored, else the value
// it acts on by default (jsonapi.OptionDefaults).
func actedOption(opts map[string]json.RawMessage, name string) json.RawMessage {
	if v, ok := opts[name]; ok {
		return v
	}
	return strconv.AppendInt(nil, jsonapi.OptionDefaults[name], 10)
}

func (a *Admin) statusQueue(ctx context.Context, tenant tenancy.TenantID, req Request) (int, []byte) {
	q, parts, status, refused := a.queueStats(ctx, tenant, req)
	if refused != nil {
		return status, refused
	}
	out := StatusQueueDetail{
		Queue: StatusQueueInfo{ID: id(q.ID), Name: q.Name, Namespace: q.Namespace, Task: q.Task,
			Priority: option(q.Options, "priority"), CreatedAt: StatTime(q.CreatedAt),
			Config: QueueConfig{LeaseTime: actedOption(q.Options, "leaseTime"), RetryLimit: actedOption(q.Options, "retryLimit"),
				RetryDelay: option(q.Options, "retryDelay"), TTL: option(q.Options, "ttl"),
				MaxQueueSize: option(q.Options, "maxQueueSize"), DeadLetterQueue: option(q.Options, "deadLetterQueue")}},
		Partitions: make([]StatusPartition, 0, len(parts)),
	}
	for _, p := range parts {
		c := sixCounts(p.Counts)
		out.Partitions = append(out.Partitions, StatusPartition{ID: id(p.ID), Name: p.Name, CreatedAt: StatTime(p.Oldest),
			Messages: c, Stats: c, Cursor: CursorStats{TotalConsumed: p.Counts.Completed},
			LastActivity: StatTime(p.LastWrite), OldestMessage: StatTime(p.Oldest), NewestMessage: StatTime(p.Newest)})
		out.Totals.SixCounts = addSix(out.Totals.SixCounts, c)
	}
	out.Totals.Messages = out.Totals.SixCounts
	return jsonapi.StatusOK, jsonapi.AppendResource(nil, out)
}
