package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
)

// jsPublishers are the JetStream consumer load's publishers: each its own
// connection and nats.go JetStream context, publishing with PublishAsync
// and up to -pending acks outstanding. Message n carries its stamp at the
// front of its payload (stamp) and goes to subject n % len(subjects).
type jsPublishers struct {
	pubs     []js.JetStream
	conns    []*nats.Conn
	subjects []string
	size     int    // payload bytes
	idPrefix string // Nats-Msg-Id is <idPrefix><n>
	stream   string // the stream every PubAck must name
	stall    time.Duration

	next           atomic.Int64 // the next message number of a saturating run
	acked, failed  atomic.Int64
	errMu          sync.Mutex // guards firstErr: every publisher's ack handler may set it
	firstErr       error
	stopAfterLimit int64 // a saturating run publishes at most this many in all (0: no limit)
}

// newJSPublishers connects n publishers to url. A publish unanswered for
// stall fails (as does one that waits that long for room in its window),
// so that a target that takes messages and never acknowledges them ends
// the run instead of hanging it.
func newJSPublishers(url string, n, window int, stream string, subjects []string, size int, idPrefix string, stall time.Duration) (*jsPublishers, error) {
	p := &jsPublishers{subjects: subjects, size: size, idPrefix: idPrefix, stream: stream, stall: stall}
	for range n {
		nc, err := nats.Connect(url, nats.Name("queen-bench-publisher"))
		if err != nil {
			p.close()
			return nil, fmt.Errorf("publisher connection to %s: %w", url, err)
		}
		p.conns = append(p.conns, nc)
		j, err := js.New(nc, js.WithPublishAsyncMaxPending(window), js.WithPublishAsyncTimeout(stall),
			js.WithPublishAsyncAckHandler(func(_ js.JetStream, _ *nats.Msg, ack *js.PubAck) {
				if ack.Stream == stream {
					p.acked.Add(1)
					return
				}
				p.fail(fmt.Errorf("a PubAck from stream %q, not %q", ack.Stream, stream))
			}),
			js.WithPublishAsyncErrHandler(func(_ js.JetStream, _ *nats.Msg, err error) { p.fail(p.unanswered(err)) }))
		if err != nil {
			p.close()
			return nil, err
		}
		p.pubs = append(p.pubs, j)
	}
	return p, nil
}

func (p *jsPublishers) fail(err error) {
	p.failed.Add(1)
	p.errMu.Lock()
	if p.firstErr == nil {
		p.firstErr = err
	}
	p.errMu.Unlock()
}

func (p *jsPublishers) err() error {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return p.firstErr
}

func (p *jsPublishers) close() {
	for _, nc := range p.conns {
		nc.Close()
	}
}

// run publishes from every publisher until stop ends (saturating; at most
// stopAfterLimit messages in all when set) or, with sch, until the
// timetable is over, each message due at its time and stamped with it;
// then it waits for the acks outstanding (ctx bounds that wait). The
// returned channel is closed when every publisher is done.
func (p *jsPublishers) run(ctx, stop context.Context, sch *schedule, late *lateness) <-chan struct{} {
	var wg sync.WaitGroup
	for _, j := range p.pubs {
		wg.Go(func() {
			for {
				var n int64
				var at time.Time
				if sch != nil {
					var ok bool
					if n, at, ok = next(ctx, stop, 0, sch, late); !ok {
						break
					}
				} else {
					if stop.Err() != nil {
						break
					}
					n, at = p.next.Add(1)-1, time.Now()
					if p.stopAfterLimit > 0 && n >= p.stopAfterLimit {
						break
					}
				}
				// PublishAsync keeps the message until its ack: a buffer of its own.
				data := stamp(make([]byte, 0, p.size), at, n, p.size)
				id := p.idPrefix + strconv.FormatInt(n, 10)
				if _, err := j.PublishAsync(p.subjects[n%int64(len(p.subjects))], data, js.WithMsgID(id), js.WithStallWait(p.stall)); err != nil {
					p.fail(p.unanswered(err))
				}
			}
			select { // what is in flight at the end is answered and counted
			case <-j.PublishAsyncComplete():
			case <-ctx.Done():
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}

// unanswered names a publish that no PubAck answered within stall, whether
// it waited for its own ack or for room in a full window: which of the two
// a target that never answers shows first depends on the machine's pace.
func (p *jsPublishers) unanswered(err error) error {
	if errors.Is(err, js.ErrAsyncPublishTimeout) || errors.Is(err, js.ErrTooManyStalledMsgs) {
		return fmt.Errorf("a publish unanswered for %s: %w", p.stall, err)
	}
	return err
}

// jsSubjects are the load's subjects: <prefix>.0 … <prefix>.<n-1>.
func jsSubjects(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + "." + strconv.Itoa(i)
	}
	return out
}

// padding fills payloads up to their size.
var padding = func() []byte {
	b := make([]byte, 64<<10)
	for i := range b {
		b[i] = 'x'
	}
	return b
}()

// stamp appends to buf the JSON payload of message n sent (or due) at:
// {"t":<UnixNano>,"n":<n>,"d":"xxx…"}, size bytes when size allows, the
// send time at the front so that a consumer reads it first.
func stamp(buf []byte, at time.Time, n int64, size int) []byte {
	b := append(buf, `{"t":`...)
	b = strconv.AppendInt(b, at.UnixNano(), 10)
	b = strconv.AppendInt(append(b, `,"n":`...), n, 10)
	b = append(b, `,"d":"`...)
	if pad := size - len(b) - 2; pad > 0 {
		b = append(b, padding[:min(pad, len(padding))]...)
	}
	return append(b, `"}`...)
}

// unstamp reads what stamp wrote: the send time and the message number.
func unstamp(data []byte) (at time.Time, n int64, ok bool) {
	const tKey, nKey = `{"t":`, `,"n":`
	if len(data) < len(tKey) || string(data[:len(tKey)]) != tKey {
		return time.Time{}, 0, false
	}
	ns, rest, ok := digits(data[len(tKey):])
	if !ok || len(rest) < len(nKey) || string(rest[:len(nKey)]) != nKey {
		return time.Time{}, 0, false
	}
	n, rest, ok = digits(rest[len(nKey):])
	if !ok || len(rest) == 0 || rest[0] != ',' {
		return time.Time{}, 0, false
	}
	return time.Unix(0, ns), n, true
}

// digits reads the decimal number at the front of b (no sign, at most 19
// digits, as a UnixNano has) without allocating.
func digits(b []byte) (v int64, rest []byte, ok bool) {
	i := 0
	for ; i < len(b) && i < 20 && b[i] >= '0' && b[i] <= '9'; i++ {
		v = v*10 + int64(b[i]-'0')
	}
	return v, b[i:], i > 0 && i < 20 && v >= 0
}
