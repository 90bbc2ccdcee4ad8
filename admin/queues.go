package admin

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/pgwire"
)

// Queen's queue resources (docs/admin.md, "Queues") and the client methods
// Queen has no route for (docs/admin.md, "Client methods with no Queen
// route"). The counts are read when asked (pgwire.QueueStats),
// from what the bridge keeps per partition; nothing is refreshed in the
// background, so stats refresh does nothing and statsAge is 0.

func (a *Admin) queueRoutes() []Route {
	return []Route{
		{Method: "GET", Pattern: "/api/v1/resources/queues", Serve: a.listQueues},
		{Method: "GET", Pattern: "/api/v1/resources/queues/{queue}", Serve: a.getQueue},
		{Method: "DELETE", Pattern: "/api/v1/resources/queues/{queue}", Admin: true, Serve: a.deleteQueue},
		{Method: "GET", Pattern: "/api/v1/resources/namespaces", Serve: a.listNamespaces},
		{Method: "GET", Pattern: "/api/v1/resources/tasks", Serve: a.listTasks},
		{Method: "GET", Pattern: "/api/v1/resources/overview", Serve: a.overview},
		{Method: "POST", Pattern: "/api/v1/stats/refresh", Admin: true, Serve: func(context.Context, tenancy.TenantID, Request) (int, []byte) {
			return jsonapi.StatusOK, StatsRefreshed()
		}},
		// Client methods that reach no Queen route (docs/admin.md).
		{Method: "DELETE", Pattern: "/api/v1/queues/{queue}/clear", Serve: notAQueenRoute},
		{Method: "GET", Pattern: "/api/v1/resources/partitions", Serve: notAQueenRoute},
		{Method: "POST", Pattern: "/api/v1/messages/{partitionId}/{transactionId}/retry", Serve: notAQueenRoute},
		{Method: "POST", Pattern: "/api/v1/messages/{partitionId}/{transactionId}/dlq", Serve: notAQueenRoute},
	}
}

func notAQueenRoute(context.Context, tenancy.TenantID, Request) (int, []byte) {
	return jsonapi.StatusNotFound, NotAQueenRoute()
}

// failed answers a database error: 503 when PostgreSQL could not be
// reached or did not answer in time (the clients resend, which is safe for
// every route here), else 500.
func failed(err error) (int, []byte) {
	if pgwire.IsUnavailable(err) || pgwire.IsTimeout(err) {
		return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, err.Error())
	}
	return jsonapi.StatusInternalServerError, jsonapi.AppendError(nil, err.Error())
}

// queueName is the {queue} path value (percent-decoded by the front door)
// and whether it can name a queue at all.
func queueName(req Request) (string, bool) {
	name := req.Path("queue")
	return name, jsonapi.CheckName("queue", name, true) == nil
}

func id(n int64) string { return strconv.FormatInt(n, 10) }

func sixCounts(c pgwire.Counts) SixCounts {
	return SixCounts{Total: c.Total, Pending: c.Pending, Processing: c.Processing, Completed: c.Completed, DeadLetter: c.DeadLetter}
}

func summary(q pgwire.QueueStat) QueueSummary {
	return QueueSummary{ID: id(q.ID), Name: q.Name, Namespace: q.Namespace, Task: q.Task, CreatedAt: StatTime(q.CreatedAt),
		Partitions: q.Partitions, Messages: ThreeCounts{Total: q.Counts.Total, Pending: q.Counts.Pending, Processing: q.Counts.Processing}}
}

func (a *Admin) listQueues(ctx context.Context, tenant tenancy.TenantID, _ Request) (int, []byte) {
	qs, err := a.cfg.DB.QueueStats(ctx, tenant, pgwire.QueueFilter{})
	if err != nil {
		return failed(err)
	}
	out := QueueList{Queues: make([]QueueSummary, 0, len(qs))}
	for _, q := range qs {
		out.Queues = append(out.Queues, summary(q))
	}
	return jsonapi.StatusOK, jsonapi.AppendResource(nil, out)
}

// queueNotFound is Queen's answer for an unknown queue.
func queueNotFound() (int, []byte) {
	return jsonapi.StatusNotFound, jsonapi.AppendError(nil, "Queue not found")
}

// queueStats reads the {queue} of req and its partitions' counts. When
// either cannot be had (no such queue for the tenant, a failed read),
// refused is the answer to give instead, with its status.
func (a *Admin) queueStats(ctx context.Context, tenant tenancy.TenantID, req Request) (q pgwire.QueueInfo, parts []pgwire.PartitionStat, status int, refused []byte) {
	name, ok := queueName(req)
	if !ok {
		status, refused = queueNotFound()
		return
	}
	q, parts, found, err := a.cfg.DB.PartitionStats(ctx, tenant, name)
	if err != nil {
		status, refused = failed(err)
		return
	}
	if !found {
		status, refused = queueNotFound()
		return
	}
	return q, parts, 0, nil
}

func (a *Admin) getQueue(ctx context.Context, tenant tenancy.TenantID, req Request) (int, []byte) {
	q, parts, status, refused := a.queueStats(ctx, tenant, req)
	if refused != nil {
		return status, refused
	}
	out := QueueDetail{ID: id(q.ID), Name: q.Name, Namespace: q.Namespace, Task: q.Task, CreatedAt: StatTime(q.CreatedAt),
		Partitions: make([]PartitionDetail, 0, len(parts))}
	for _, p := range parts {
		out.Partitions = append(out.Partitions, PartitionDetail{ID: id(p.ID), Name: p.Name, CreatedAt: StatTime(p.Oldest),
			Stats: sixCounts(p.Counts), OldestMessage: StatTime(p.Oldest), NewestMessage: StatTime(p.Newest)})
		out.Totals = addSix(out.Totals, sixCounts(p.Counts))
	}
	return jsonapi.StatusOK, jsonapi.AppendResource(nil, out)
}

func addSix(a, b SixCounts) SixCounts {
	return SixCounts{Total: a.Total + b.Total, Pending: a.Pending + b.Pending, Processing: a.Processing + b.Processing,
		Completed: a.Completed + b.Completed, DeadLetter: a.DeadLetter + b.DeadLetter}
}

// purgeBudget bounds how long a delete goes on removing the deleted
// partitions' segments before it answers: a small queue is gone whole by
// then; the retention ticks of every bridge remove what is left of a large
// one.
const purgeBudget = 2 * time.Second

// deleteQueue deletes the tenant's queue and everything under it
// (pgwire.DeleteQueue, one transaction in the one lock order). Once it has
// committed no reader or writer reaches the queue; then this bridge and,
// through the queue.changed broadcast, every other forgets it
// (queues.Settings.Dropped: the settings cache, and through OnDrop the
// read side's marks and parked reads and pops, the hot tail and fusion),
// and the segments are purged in bounded steps.
func (a *Admin) deleteQueue(ctx context.Context, tenant tenancy.TenantID, req Request) (int, []byte) {
	name, ok := queueName(req)
	if !ok { // no queue can have this name
		return jsonapi.StatusOK, jsonapi.AppendResource(nil, QueueDeleted{Deleted: true, Queue: name})
	}
	d, err := a.cfg.DB.DeleteQueue(ctx, tenant, name)
	if err != nil {
		return failed(err)
	}
	if d.Existed {
		a.cfg.Queues.Dropped(ctx, tenant, name, d.Partitions)
		a.purge(ctx)
	}
	return jsonapi.StatusOK, jsonapi.AppendResource(nil, QueueDeleted{Deleted: true, Queue: name, Existed: d.Existed})
}

// purge runs purge steps until nothing is left or the budget is spent.
func (a *Admin) purge(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, purgeBudget)
	defer cancel()
	if err := a.cfg.Keeper.Purge(ctx); err != nil && ctx.Err() == nil {
		a.cfg.Logger.Warn().Str("target", "pgwire").Err(err).Msg("purge after a queue delete failed; retention ticks go on with it")
	}
}

// group sums queues by a key (their namespace or task); queues whose key
// is "" are left out.
type group struct {
	key                string
	queues, partitions int64
	total, pending     int64
}

func groupBy(qs []pgwire.QueueStat, key func(pgwire.QueueStat) string) []group {
	at := map[string]int{}
	var out []group
	for _, q := range qs {
		k := key(q)
		if k == "" {
			continue
		}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, group{key: k})
		}
		g := &out[i]
		g.queues++
		g.partitions += q.Partitions
		g.total += q.Counts.Total
		g.pending += q.Counts.Pending
	}
	slices.SortFunc(out, func(a, b group) int { return cmp.Compare(a.key, b.key) })
	return out
}

func (a *Admin) listNamespaces(ctx context.Context, tenant tenancy.TenantID, _ Request) (int, []byte) {
	qs, err := a.cfg.DB.QueueStats(ctx, tenant, pgwire.QueueFilter{})
	if err != nil {
		return failed(err)
	}
	out := NamespaceList{Namespaces: []NamespaceSummary{}}
	for _, g := range groupBy(qs, func(q pgwire.QueueStat) string { return q.Namespace }) {
		out.Namespaces = append(out.Namespaces, NamespaceSummary{Namespace: g.key, Queues: g.queues, Partitions: g.partitions,
			Messages: TwoCounts{Total: g.total, Pending: g.pending}})
	}
	return jsonapi.StatusOK, jsonapi.AppendResource(nil, out)
}

func (a *Admin) listTasks(ctx context.Context, tenant tenancy.TenantID, _ Request) (int, []byte) {
	qs, err := a.cfg.DB.QueueStats(ctx, tenant, pgwire.QueueFilter{})
	if err != nil {
		return failed(err)
	}
	out := TaskList{Tasks: []TaskSummary{}}
	for _, g := range groupBy(qs, func(q pgwire.QueueStat) string { return q.Task }) {
		out.Tasks = append(out.Tasks, TaskSummary{Task: g.key, Queues: g.queues, Partitions: g.partitions,
			Messages: TwoCounts{Total: g.total, Pending: g.pending}})
	}
	return jsonapi.StatusOK, jsonapi.AppendResource(nil, out)
}

// overview sums every queue of the tenant. Lag is each partition's
// messages after its reference cursor and the age of the first of them
// (pgwire.TenantLag); throughput is 0: the bridge keeps no rates over time
// (honest numbers or none: docs/admin.md, "The counts").
func (a *Admin) overview(ctx context.Context, tenant tenancy.TenantID, _ Request) (int, []byte) {
	qs, err := a.cfg.DB.QueueStats(ctx, tenant, pgwire.QueueFilter{})
	if err != nil {
		return failed(err)
	}
	lag, err := a.cfg.DB.TenantLag(ctx, tenant)
	if err != nil {
		return failed(err)
	}
	out := Overview{Queues: int64(len(qs)), Timestamp: StatTime(time.Now()),
		Namespaces: int64(len(groupBy(qs, func(q pgwire.QueueStat) string { return q.Namespace }))),
		Tasks:      int64(len(groupBy(qs, func(q pgwire.QueueStat) string { return q.Task }))),
		Lag: OverviewLag{
			Time:   LagSpread{Avg: lag.SecondsAvg, Median: lag.SecondsMedian, Min: lag.SecondsMin, Max: lag.SecondsMax},
			Offset: LagSpread{Avg: lag.OffsetAvg, Median: lag.OffsetMedian, Min: float64(lag.OffsetMin), Max: float64(lag.OffsetMax)},
		}}
	for _, q := range qs {
		out.Partitions += q.Partitions
		out.Messages = addSix(out.Messages, sixCounts(q.Counts))
	}
	return jsonapi.StatusOK, jsonapi.AppendResource(nil, out)
}
