package push

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/internal/smallmap"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/ownership"
	"github.com/queenbridge/queenbridge/queues"
	"github.com/queenbridge/queenbridge/readside"
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
// one item's result (Item), which nobody renders here. Exactly one is set.
type Answer struct {
	Body func(status int, body []byte)
	Item func(status int, r jsonapi.Result)
}

// refuse answers a push refused as a whole: the push API gets
// {"error": msg}; PushItem's caller a result that carries only the message.
func (a Answer) refuse(status int, msg string) {
	if a.Item != nil {
		a.Item(status, jsonapi.Result{Error: msg})
		return
	}
	a.Body(status, jsonapi.ErrorBody(msg))
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
	minted           []bool  // per frame: its transactionId was minted here; nil while none is
	items            []int32 // request index of each frame
}

// Push handles one push body for tenant and calls answer exactly once, maybe
// from another goroutine, when every item has its verdict. It never blocks
// waiting for verdicts.
func (p *Pusher) Push(ctx context.Context, transport string, tenant tenancy.TenantID, body []byte, answer func(int, []byte)) {
	items, err := jsonapi.DecodePush(body)
	p.PushDecoded(ctx, transport, tenant, items, err, Answer{Body: answer})
}

// ErrStopping answers what arrives while the bridge shuts down.
const ErrStopping = "the bridge is shutting down"

// PushDecoded is Push after decoding: err is the decoding's.
func (p *Pusher) PushDecoded(ctx context.Context, transport string, tenant tenancy.TenantID, items []jsonapi.Item, err error, out Answer) {
	p.cfg.Observer.Request(transport)
	if p.cfg.Stopping() {
		out.refuse(jsonapi.StatusServiceUnavailable, ErrStopping)
		return
	}
	if err != nil {
		out.refuse(jsonapi.StatusBadRequest, err.Error())
		return
	}
	if len(items) == 0 { // never from a one-item intake
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

// forwardOthers sends the groups another bridge owns to their owners (the
// router gathers them with concurrent requests' into one message per
// owner) and returns the groups this bridge writes. With every group its
// own (always, for a bridge alone) it allocates nothing.
func (c *pushCall) forwardOthers(ctx context.Context, groups []*group) []*group {
	var byOwner smallmap.Map[string, []*group]
	var local []*group // nil until a group goes elsewhere
	for i, g := range groups {
		owner := c.p.cfg.Router.Owner(c.tenant, g.queue, g.partition)
		if owner == "" {
			if local != nil {
				local = append(local, g)
			}
			continue
		}
		if local == nil {
			local = append(make([]*group, 0, len(groups)), groups[:i]...)
		}
		if gs, ok := byOwner.Get(owner); ok {
			byOwner.Set(owner, append(gs, g))
		} else {
			byOwner.Put(owner, []*group{g})
		}
	}
	if local == nil {
		return groups
	}
	byOwner.Each(func(owner string, gs []*group) { c.forward(ctx, owner, gs) })
	return local
}

// forward sends gs to their owner; the router's goroutine that hears the
// answer settles them with its verdicts. Those it did not answer are
// written here, probe and all: the owner may have written them anyway
// (docs/ownership.md).
func (c *pushCall) forward(ctx context.Context, owner string, gs []*group) {
	wire := make([]ownership.Group, len(gs))
	for i, g := range gs {
		wire[i] = ownership.Group{Queue: g.queue, Partition: g.partition, Frames: g.frames}
	}
	c.p.cfg.Router.ForwardAsync(owner, c.tenant, wire, func(answers []ownership.Answer, err error) {
		var unanswered []*group
		for i, g := range gs {
			if err == nil && !answers[i].Refused {
				c.settle(g, answers[i].Verdicts)
				continue
			}
			unanswered = append(unanswered, g)
		}
		if len(unanswered) == 0 {
			return
		}
		// Submitting may wait for room in fusion; the router's goroutine
		// answers the other requests of the message, so a goroutine of
		// this call, which ends once they are submitted, does it.
		go func() {
			for _, g := range unanswered {
				g.minted = nil
				c.submit(ctx, g, nil)
			}
		}()
	})
}

// submitWindow is how many of one request's partitions are in fusion at
// once. Measured (docs/limits.md): with 64, a one-item push beside
// back-to-back 1,000-partition pushes had p99 6.8 ms instead of 36 ms, but
// the big pushes lost half their throughput; 256 keeps 94 % of it with
// p99 14.5 ms.
const submitWindow = 256

// distinctPartitions counts the request's distinct (queue, partition)
// pairs, up to one past max (when there cannot be more than max, it does
// not count).
func distinctPartitions(items []jsonapi.Item, max int) int {
	if len(items) <= max {
		return len(items)
	}
	seen := make(map[[2]string]struct{}, max+1)
	for i := range items {
		seen[[2]string{items[i].Queue, items[i].Partition}] = struct{}{}
	}
	return len(seen)
}

// prepare mints ids, resolves transactionIds, applies layer-1 dedup and
// encryption, and groups the leaders by partition.
func (c *pushCall) prepare(ctx context.Context) []*group {
	type l1key struct{ queue, partition, txid string }
	var seen smallmap.Map[l1key, int32]
	var encrypted smallmap.Map[string, error] // queue -> nil (encrypt), queues.ErrPlain (plaintext) or the reason to fail
	var byPart smallmap.Map[[2]string, *group]
	groups := make([]*group, 0, 1)
	for i := range c.items {
		it := &c.items[i]
		id := uuid.Must(uuid.NewV7())
		c.st[i].id = id
		c.st[i].txid = it.TransactionID
		if c.st[i].txid == "" {
			c.st[i].txid = id.String()
		}
		k := l1key{it.Queue, it.Partition, c.st[i].txid}
		if lead, ok := seen.Get(k); ok {
			c.st[i].leader = lead // a follower: no frame, copies its leader's final verdict
			continue
		}
		seen.Put(k, int32(i))
		c.st[i].leader = int32(i)

		enc, ok := encrypted.Get(it.Queue)
		if !ok {
			enc = c.p.cfg.Queues.EncryptionFor(ctx, c.tenant, it.Queue)
			encrypted.Put(it.Queue, enc)
		}
		f := segment.Frame{ID: id, TransactionID: c.st[i].txid, TraceID: it.TraceID, Payload: it.Payload}
		var encoded uint8 // describes the plaintext, so it survives sealing
		if it.Encoded {
			encoded = segment.FlagBase64
		}
		switch {
		case enc == nil:
			f.Payload, f.Flags = c.p.cfg.Queues.Seal(c.tenant, it.Queue, it.Partition, it.Payload)
		case !errors.Is(enc, queues.ErrPlain):
			c.st[i].result = jsonapi.Result{Status: jsonapi.StatusFailed, Error: enc.Error()}
			continue
		}
		f.Flags |= encoded
		pk := [2]string{it.Queue, it.Partition}
		g, _ := byPart.Get(pk)
		if g == nil {
			g = &group{queue: it.Queue, partition: it.Partition}
			byPart.Put(pk, g)
			groups = append(groups, g)
		}
		if it.TransactionID == "" && g.minted == nil {
			g.minted = make([]bool, len(g.frames), len(g.frames)+1)
		}
		if g.minted != nil {
			g.minted = append(g.minted, it.TransactionID == "")
		}
		g.frames = append(g.frames, f)
		g.items = append(g.items, int32(i))
	}
	for _, g := range groups { // the frames slices are final now
		for j, idx := range g.items {
			c.st[idx].frame = &g.frames[j]
		}
	}
	return groups
}

// submit hands one group to fusion; release (if any) runs once the group
// has its verdicts or was refused.
func (c *pushCall) submit(ctx context.Context, g *group, release func()) {
	if release == nil {
		release = func() {}
	}
	err := c.p.cfg.Fusion.Submit(ctx, fusion.Submission{
		Tenant: c.tenant, Queue: g.queue, Partition: g.partition, Frames: g.frames, Minted: g.minted,
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

// finish answers once every group settled. Items whose write failed are
// spooled first; that fsync must not hold up the fusion goroutine that
// settled the last group, so it runs on a goroutine of its own.
func (c *pushCall) finish() {
	for i := range c.st {
		if c.st[i].result.Status == statusError {
			go func() {
				c.spoolErrors(context.Background())
				c.answerNow()
			}()
			return
		}
	}
	c.answerNow()
}

// answerNow copies each leader's final verdict to its followers, renders,
// and answers.
func (c *pushCall) answerNow() {
	status := jsonapi.StatusCreated
	// Counted per status, then added once each: a label look-up per item
	// costs more than the count.
	var counts smallmap.Map[string, int]
	for i := range c.st {
		if lead := c.st[i].leader; lead != int32(i) {
			c.st[i].result = followerResult(c.st[lead].result)
		}
		st := c.st[i].result.Status
		if n, ok := counts.Get(st); ok {
			counts.Set(st, n+1)
		} else {
			counts.Put(st, 1)
		}
		if st == jsonapi.StatusFailed {
			status = jsonapi.StatusInternalServerError
		}
	}
	counts.Each(c.p.cfg.Observer.Items)
	c.p.cfg.Observer.Latency(c.transport, time.Since(c.start))
	if c.out.Item != nil {
		c.out.Item(status, c.st[0].result)
	} else {
		c.out.Body(status, c.render())
	}
	c.p.cfg.Reads.Announce(c.written())
}

// written lists the partitions this request added messages to.
func (c *pushCall) written() []readside.Key {
	var keys []readside.Key
	var seen map[readside.Key]bool // only for requests too big to scan keys
	for i := range c.st {
		if c.st[i].result.Status != jsonapi.StatusQueued {
			continue
		}
		k := readside.Key{Tenant: c.tenant, Queue: c.items[i].Queue, Partition: c.items[i].Partition}
		if seen == nil && len(keys) < 8 {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
			continue
		}
		if seen == nil {
			seen = make(map[readside.Key]bool, len(c.st))
			for _, k := range keys {
				seen[k] = true
			}
		}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys
}

// render writes the response array: one small object per item.
func (c *pushCall) render() []byte {
	out := make([]byte, 0, 64+len(c.items)*400) // one answer, both spellings, is about 350 bytes
	out = append(out, '[')
	for i := range c.items {
		if i > 0 {
			out = append(out, ',')
		}
		out = jsonapi.AppendResult(out, i, &c.st[i].result, c.st[i].txid, c.items[i].TraceID, c.items[i].Queue, c.items[i].Partition)
	}
	return append(out, ']')
}

// followerResult is what a repeat inside one request is answered: a
// duplicate of whatever its leader finally became.
func followerResult(lead jsonapi.Result) jsonapi.Result {
	switch lead.Status {
	case jsonapi.StatusQueued, jsonapi.StatusDuplicate:
		return jsonapi.Result{Status: jsonapi.StatusDuplicate, MessageID: lead.MessageID, HasID: true, Offset: lead.Offset}
	}
	return lead // buffered (the leader's id) or failed
}
