package pgwire

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// PostgreSQL asks its client to run again a statement it killed to break a
// deadlock (40P01) or to keep a transaction serializable (40001): the
// statement's transaction rolled back, so nothing of it happened, and the
// same statement run again may well succeed. withConn (conn.go) does that
// for every call, up to retryAttempts times, when it knows the call's
// effect did not happen; and it does the same for a call whose connection
// was lost before its statement was sent. The caller sees the outcome of
// the last try, and never "deadlock detected" when a try succeeded.

// retryAttempts bounds the tries of one call: a deadlock broken once
// rarely comes back at once, so a call still failing after this many tries
// fails.
const retryAttempts = 4

// retryBackoff is the pause before the second try; it doubles before each
// further one. Short: the other side of a deadlock has gone on (or been
// killed) by the time PostgreSQL answered.
const retryBackoff = 5 * time.Millisecond

// retryable says whether PostgreSQL asked for err's statement to be run
// again, or the connection was lost before it was sent.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "40P01" || pgErr.Code == "40001"
	}
	return pgconn.SafeToRetry(err)
}

// callCtx is the context a call's fn runs with: the statement timeout's
// context, plus what the tracer learns of the statements fn sends, so that
// withConn can tell whether fn had an effect before it failed. One call
// (one goroutine) owns it; the tracer runs in that goroutine, inside fn's
// calls on the connection.
type callCtx struct {
	context.Context
	// effect is set when a statement committed (it succeeded outside a
	// transaction block, or it was a COMMIT): a retry would do it again.
	effect bool
	// last is the text of the last statement sent: what a retry is
	// counted under.
	last string
}

type callKey struct{}

func (c *callCtx) Value(key any) any {
	if key == (callKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// callTracer is the pool's pgx.QueryTracer: it tells each call's callCtx
// what its statements did. A statement sent outside it (PgConn's own
// methods: the known-partition push) is not seen, so a call sends such a
// statement last, where a failure of it is the call's failure.
type callTracer struct{}

func (callTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if c, ok := ctx.Value(callKey{}).(*callCtx); ok {
		c.last = data.SQL
	}
	return ctx
}

// TracePrepareStart names the statement a call prepares and then runs
// through PgConn (the known-partition push), which TraceQueryStart does not
// see.
func (callTracer) TracePrepareStart(ctx context.Context, _ *pgx.Conn, data pgx.TracePrepareStartData) context.Context {
	if c, ok := ctx.Value(callKey{}).(*callCtx); ok {
		c.last = data.SQL
	}
	return ctx
}

func (callTracer) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

func (callTracer) TraceQueryEnd(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryEndData) {
	c, ok := ctx.Value(callKey{}).(*callCtx)
	if !ok || data.Err != nil || conn.PgConn().TxStatus() != 'I' {
		return
	}
	// A ROLLBACK ends a transaction block with nothing done; anything
	// else that succeeds and leaves no transaction open has committed.
	if !strings.EqualFold(strings.TrimSpace(c.last), "rollback") {
		c.effect = true
	}
}

// retryCounts counts the retries by statement, for Stats.
type retryCounts struct {
	mu sync.Mutex // guards by: calls of every goroutine count here
	by map[string]uint64
}

func (r *retryCounts) add(name string) {
	r.mu.Lock()
	if r.by == nil {
		r.by = map[string]uint64{}
	}
	r.by[name]++
	r.mu.Unlock()
}

func (r *retryCounts) snapshot() map[string]uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]uint64, len(r.by))
	for k, v := range r.by {
		out[k] = v
	}
	return out
}

var (
	calledFunction = regexp.MustCompile(`(?i)\bqueen\.(\w+)\s*\(`)
	firstTable     = regexp.MustCompile(`(?i)\bqueen\.(\w+)`)
)

// statementName names a statement for the retry counts, from its text:
// the queen function it calls (consumer_ack_v1), else its verb and the
// first queen table it names (UPDATE consumer_cursors). The set of names
// is as small as the set of statements in this package.
func statementName(sql string) string {
	if m := calledFunction.FindStringSubmatch(sql); m != nil {
		return m[1]
	}
	verb, _, _ := strings.Cut(strings.TrimSpace(sql), " ")
	verb = strings.ToUpper(strings.TrimSpace(verb))
	if m := firstTable.FindStringSubmatch(sql); m != nil {
		return verb + " " + m[1]
	}
	if verb == "" {
		return "unknown"
	}
	return verb
}
