package admin

import (
	"context"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
)

// One of the web console's own routes (docs/console.md), over the state
// this room's routes read: a queue's partitions with its consumer groups'
// cursors on them, and the streaming queries reading it with their state's
// size.

func (a *Admin) consoleRoutes() []Route {
	return []Route{
		{Method: "GET", Pattern: "/api/v1/resources/queues/{queue}/consumers", Serve: a.queueConsumers},
	}
}

// queueConsumers answers a queue's partitions, by name, and its groups, by
// name, each with every partition of the queue: a partition the group has
// not popped yet counts its lag from where the group's subscription starts
// it (pgwire.QueueConsumers), so a group's lag is the whole queue's.
func (a *Admin) queueConsumers(ctx context.Context, tenant tenancy.TenantID, req Request) (int, []byte) {
	name, ok := queueName(req)
	if !ok {
		return queueNotFound()
	}
	parts, cursors, found, err := a.cfg.DB.QueueConsumers(ctx, tenant, name)
	if err != nil {
		return failed(err)
	}
	if !found {
		return queueNotFound()
	}
	out := QueueConsumers{Queue: name, Partitions: make([]ConsumerPartition, len(parts))}
	for i, p := range parts {
		out.Partitions[i] = ConsumerPartition{ID: p.ID, Name: p.Name, LastOffset: p.Last, LastWrite: p.LastWrite, Messages: p.Messages}
	}
	for _, c := range cursors { // by group, then partition name
		if len(out.Groups) == 0 || out.Groups[len(out.Groups)-1].Name != c.Group {
			out.Groups = append(out.Groups, ConsumerGroup{Name: c.Group})
		}
		g := &out.Groups[len(out.Groups)-1]
		g.Partitions = append(g.Partitions, GroupCursor{Partition: c.Partition, PartitionID: c.PartitionID, Cursor: c.Cursor, Lag: c.Lag, Popped: c.Popped,
			Lease: c.Lease, Leased: c.LeaseLive, Expires: c.Expires, BatchSize: c.Delivered})
	}
	streams, err := a.cfg.DB.StreamQueriesOf(ctx, tenant, name)
	if err != nil {
		return failed(err)
	}
	for _, s := range streams {
		out.Streams = append(out.Streams, StreamQueryInfo{ID: s.ID, Name: s.Name, Sink: s.Sink, ConfigHash: s.Hash, Partitions: s.Partitions,
			Rows: s.Rows, Bytes: s.Bytes, Registered: s.UpdatedAt, LastWrite: s.LastCycle})
	}
	return jsonapi.StatusOK, EncodeQueueConsumers(out)
}
