package push

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/segment"
)

// statusError is an item whose write failed: it never reaches the wire, it
// is turned into buffered (spooled) or failed before the answer is rendered.
const statusError = "error"

// pushCall is one push request between decode and answer. Groups settle from
// fusion goroutines; the countdown publishes their writes to whichever
// goroutine settles last, which renders and answers.
type pushCall struct {
	p         *Pusher
	tenant    tenancy.TenantID
	items     []jsonapi.Item
	st        []itemState // per item, one allocation for the request
	pending   atomic.Int32
	start     time.Time
	transport string
	out       Answer
}

// Answer is who hears a push call's answer: the push API's caller gets
// the rendered result array (Body); a one-item intake (JetStream) gets its
// one item's result (Item), the publish relay every item's (Items), which
// nobody renders here. Exactly one is set.
type Answer struct {
	Body  func(status int, body []byte)
	Item  func(status int, r jsonapi.Result)
	Items func(status int, rs []jsonapi.Result)
}

// refuse answers a push refused as a whole: the push API gets
// {"error": msg}; PushItem's caller a result that carries only the message.
func (a Answer) refuse(status int, msg string) {
	if a.Item != nil {
		a.Item(status, jsonapi.Result{Error: msg})
		return
	}
	if a.Items != nil {
		a.Items(status, []jsonapi.Result{{Status: jsonapi.StatusFailed, Error: msg}})
		return
	}
	a.Body(status, jsonapi.AppendError(nil, msg))
}

// itemState is what the push call knows of one item.
type itemState struct {
	id     [16]byte       // minted message id
	txid   string         // resolved transactionId
	leader int32          // layer-1: index of the item's leader (itself when it leads)
	frame  *segment.Frame // the frame a leader became (nil: none)
	result jsonapi.Result
}

// group is the leaders of one (queue, partition) in one request.
type group struct {
	queue, partition string
	frames           []segment.Frame
	minted           []bool         // per frame: its transactionId was minted here; nil while none is
	marks            []segment.Mark // per frame: its publish relay mark; nil while none has one
	items            []int32        // request index of each frame
}

// ErrStopping answers what arrives while the bridge shuts down.
const ErrStopping = "the bridge is shutting down"

// Push runs one push request for tenant: items as jsonapi.DecodePush
// returned them (the transport answers a body that does not decode, and
// counts it). It answers out exactly once, maybe from another goroutine,
// when every item has its verdict, and never blocks waiting for verdicts.
// Every request is counted (Observer.Request), those it refuses itself
// (stopping, too many partitions) too.
func (p *Pusher) Push(ctx context.Context, transport string, tenant tenancy.TenantID, items []jsonapi.Item, out Answer) {
	p.cfg.Observer.Request(transport)
	if p.cfg.Stopping() {
		out.refuse(jsonapi.StatusServiceUnavailable, ErrStopping)
		return
	}
	if len(items) == 0 && out.Body != nil { // never from an intake
		out.Body(jsonapi.StatusCreated, []byte("[]"))
		return
	}
	if n := distinctPartitions(items, p.cfg.MaxPartitionsPerRequest); n > p.cfg.MaxPartitionsPerRequest {
		out.refuse(jsonapi.StatusBadRequest, fmt.Sprintf("the request names %d partitions; at most %d per request", n, p.cfg.MaxPartitionsPerRequest))
		return
	}
	c := &pushCall{
		p: p, tenant: tenant, items: items, start: time.Now(), transport: transport, out: out,
		st: make([]itemState, len(items)),
	}
	groups := c.prepare(ctx)
	if p.cfg.Keeper.Maintenance() {
		// Maintenance: nothing reaches PostgreSQL; every leader is spooled.
		for _, g := range groups {
			for _, idx := range g.items {
				c.st[idx].result = jsonapi.Result{Status: statusError, Error: "maintenance mode"}
			}
		}
		c.spoolErrors(ctx)
		c.answerNow()
		return
	}
	c.pending.Store(int32(len(groups)) + 1) // +1: submission in progress
	groups = c.forwardOthers(ctx, groups)
	if len(groups) <= submitWindow {
		for _, g := range groups {
			c.submit(ctx, g, nil)
		}
		c.groupDone()
		return
	}
	// A request over many partitions keeps at most submitWindow of them in
	// fusion at once, so that it takes its turn in the shards' queues
	// beside small requests instead of ahead of them. A feeder goroutine,
	// owned by this call, submits the rest as groups settle; it ends after
	// the last submission, before the answer.
	slots := make(chan struct{}, submitWindow)
	go func() {
		for _, g := range groups {
			slots <- struct{}{}
			c.submit(ctx, g, func() { <-slots })
		}
		c.groupDone()
	}()
}

// submitWindow is how many of one request's partitions are in fusion at
// once. Measured (docs/limits.md): with 64, a one-item push beside
// back-to-back 1,000-partition pushes had p99 6.8 ms instead of 36 ms, but
// the big pushes lost half their throughput; 256 keeps 94 % of it with
// p99 14.5 ms.
const submitWindow = 256

// submit hands one group to fusion; release (if any) runs once the group
// has its verdicts or was refused.
func (c *pushCall) submit(ctx context.Context, g *group, release func()) {
	if release == nil {
		release = func() {}
	}
	err := c.p.cfg.Fusion.Submit(ctx, fusion.Submission{
		Tenant: c.tenant, Queue: g.queue, Partition: g.partition, Frames: g.frames, Minted: g.minted, Marks: g.marks,
		Done: func(v []fusion.Verdict) { release(); c.settle(g, v) },
	})
	if err != nil {
		release()
		for _, idx := range g.items {
			c.st[idx].result = jsonapi.Result{Status: statusError, Error: fmt.Sprintf("not accepted: %v", err)}
		}
		c.groupDone()
	}
}

// settle records one group's verdicts.
func (c *pushCall) settle(g *group, vs []fusion.Verdict) {
	for j, v := range vs {
		idx := g.items[j]
		r := &c.st[idx].result
		switch v.Status {
		case fusion.Queued:
			*r = jsonapi.Result{Status: jsonapi.StatusQueued, MessageID: v.MessageID, HasID: true, Offset: v.Offset, CreatedAt: v.CreatedAt, PartitionID: v.PartitionID}
		case fusion.Duplicate:
			*r = jsonapi.Result{Status: jsonapi.StatusDuplicate, MessageID: v.MessageID, HasID: true, Offset: v.Offset}
		default:
			*r = jsonapi.Result{Status: statusError, Error: fmt.Sprintf("write failed: %v", v.Err)}
		}
	}
	c.groupDone()
}

func (c *pushCall) groupDone() {
	if c.pending.Add(-1) != 0 {
		return
	}
	c.finish()
}
