package jetstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/auth"
	"github.com/queenbridge/queenbridge/internal/every"
	"github.com/queenbridge/queenbridge/internal/gate"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/rs/zerolog"
)

// Publisher sends a message with a raw header block (a full
// "NATS/1.0 ...\r\n\r\n" block, or nil) to a tenant's inbox: the leaf
// connection of the tenant's account the engine delivers on, so that the
// status messages the API sends to a pull request's inbox keep their
// order with the engine's and reach the requester's account.
type Publisher interface {
	Publish(tenant tenancy.TenantID, subject, reply string, header, body []byte) error
}

// APIConfig wires the JetStream API.
type APIConfig struct {
	// NATS is the connection the API subscribes and answers on. Required.
	NATS *nats.Conn
	// Streams are the declared streams (the Intake's Streams). Required.
	Streams []Stream
	// Engine holds the consumers. Required.
	Engine Engine
	// Status publishes status messages to pull requests' inboxes.
	// Required.
	Status Publisher
	// AckConnection subscribes to the acks on a connection of the API's
	// own, made by Start with NATS's options (the same server and
	// account) and closed by Stop. An ack frees room under
	// max_ack_pending; on NATS it waits behind whatever the connection
	// takes in before it (the intake's publishes, when they share it).
	// Default false: on NATS.
	AckConnection bool
	// Accounts maps a request's NATS account to its tenant (the accounts
	// mode); nil or empty: every request is the default tenant's. Default
	// nil.
	Accounts *auth.Accounts
	// Domain is the JetStream domain clients name ("" for none): the API
	// answers $JS.<Domain>.API.> instead of $JS.API.>. Default "".
	Domain string
	// MaxBodyBytes is the largest message the streams take
	// (QUEEN_MAX_BODY_BYTES), shown as the streams' max_msg_size. Default
	// 16 MiB.
	MaxBodyBytes int64
	// Timeout bounds one request's engine call. Default 5s (nats.go's API
	// timeout).
	Timeout time.Duration
	// Workers bounds the requests served at once (each may wait on
	// PostgreSQL); a few more wait in a queue, then in the subscription.
	// Default 32.
	Workers int
	// Now is the clock of the answers' timestamps. Default time.Now.
	Now func() time.Time
	// Logger for the jetstream target. Default: disabled.
	Logger zerolog.Logger
}

// API answers the JetStream API for pull consumers on the declared
// streams ($JS.API.…) and takes the acknowledgements of what the engine
// delivered ($JS.ACK.…), in queue group QueueGroup.
type API struct {
	cfg     APIConfig
	prefix  string // "$JS.API." or "$JS.<domain>.API."
	streams map[string]*Stream
	gate    *gate.Gate // admits requests until Stop; its workers serve them
	n       apiCounters

	ctx    context.Context // the engine calls'; cancelled by Stop
	cancel context.CancelFunc
	subs   subscriptions
	ackNC  *nats.Conn // AckConnection's, made by Start, closed by Stop
	stop   sync.Once
	err    error
}

// NewAPI checks cfg.
func NewAPI(cfg APIConfig) (*API, error) {
	if cfg.NATS == nil || cfg.Engine == nil || cfg.Status == nil {
		return nil, errors.New("jetstream: APIConfig.NATS, Engine and Status are required")
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 16 << 20
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 32
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if strings.ContainsAny(cfg.Domain, ".*> \t") {
		return nil, fmt.Errorf("jetstream: domain %q must be one subject token", cfg.Domain)
	}
	a := &API{cfg: cfg, prefix: "$JS.API.", streams: map[string]*Stream{}, gate: gate.New()}
	if cfg.Domain != "" {
		a.prefix = "$JS." + cfg.Domain + ".API."
	}
	cfg.Streams = append([]Stream(nil), cfg.Streams...)
	for i := range cfg.Streams {
		a.streams[cfg.Streams[i].Name] = &cfg.Streams[i]
	}
	a.cfg.Streams = cfg.Streams
	a.ctx, a.cancel = context.WithCancel(context.Background())
	return a, nil
}

// Start subscribes to the API and the ack subjects in QueueGroup (the
// acks on a connection of their own with AckConnection). Pull requests
// and acks are handed to the engine on the subscription's delivery
// goroutine (the engine only queues them); every other request is served
// by one of Workers workers.
func (a *API) Start(context.Context) error {
	a.gate.StartWorkers(a.cfg.Workers)
	if err := a.subs.add(a.cfg.NATS, a.prefix+">", a.handleAPI); err != nil {
		return fmt.Errorf("jetstream: subscribe to %s>: %w", a.prefix, err)
	}
	acks := a.cfg.NATS
	if a.cfg.AckConnection {
		opts := a.cfg.NATS.Opts
		opts.Name += " (acks)"
		nc, err := opts.Connect()
		if err != nil {
			return fmt.Errorf("jetstream: a connection for the acks: %w", err)
		}
		a.ackNC, acks = nc, nc
	}
	if err := a.subs.add(acks, AckSubjects, a.handleAck); err != nil {
		return fmt.Errorf("jetstream: subscribe to %s: %w", AckSubjects, err)
	}
	if a.ackNC != nil {
		// The acks' connection is the API's own: Start returns once the
		// server has its subscription, so that an ack sent after Start (on
		// any connection) is not published to no one.
		if err := a.ackNC.Flush(); err != nil {
			return fmt.Errorf("jetstream: the acks' connection: %w", err)
		}
	}
	return nil
}

// Stop drains the subscriptions, admits no more requests and waits,
// within ctx, for those being served; then it cancels the engine calls
// still running and stops the workers. Idempotent.
func (a *API) Stop(ctx context.Context) error {
	a.stop.Do(func() {
		errs := a.subs.drain(ctx)
		if a.ackNC != nil {
			a.ackNC.Close()
		}
		a.gate.Close()
		if err := a.gate.Wait(ctx); err != nil {
			errs = append(errs, fmt.Errorf("jetstream: API requests: %w", err))
		}
		a.cancel()
		a.gate.StopWorkers()
		a.err = errors.Join(errs...)
	})
	return a.err
}

// request is one API request: its subject's tokens after the prefix.
type request struct {
	msg    *nats.Msg
	tokens []string
	tenant tenancy.TenantID
}

// handleAPI takes one $JS.API request on the subscription's goroutine.
func (a *API) handleAPI(m *nats.Msg) {
	a.n.requests.Add(1)
	r := request{msg: m, tokens: strings.Split(strings.TrimPrefix(m.Subject, a.prefix), ".")}
	if len(r.tokens) == 5 && r.tokens[0] == "CONSUMER" && r.tokens[1] == "MSG" && r.tokens[2] == "NEXT" {
		a.pull(m, r.tokens[3], r.tokens[4])
		return
	}
	if len(r.tokens) >= 2 && r.tokens[0] == "DIRECT" && r.tokens[1] == "GET" {
		// No stream here allows direct gets (allow_direct is false), so
		// nats-server would have no responder: answer what a client hears
		// then.
		tenant, _ := a.tenant(m)
		a.status(tenant, m.Reply, AppendNoResponders(nil))
		return
	}
	if m.Reply == "" {
		a.n.unanswerable.Add(1)
		return
	}
	tenant, err := a.tenant(m)
	if err != nil {
		a.answer(m.Reply, apiResponse{Type: typeFor(r.tokens), Error: &apiError{apiNotForAccount.Code, apiNotForAccount.ErrCode, apiNotForAccount.Description + ": " + err.Error()}})
		return
	}
	r.tenant = tenant
	served := a.gate.Go(func() {
		defer a.gate.Done()
		ctx, cancel := context.WithTimeout(a.ctx, a.cfg.Timeout)
		defer cancel()
		a.answer(m.Reply, a.serve(ctx, r))
	})
	if !served { // stopping
		a.answer(m.Reply, apiResponse{Type: typeFor(r.tokens), Error: errUnavailable})
	}
}

// tenant is the requester's tenant: in the accounts mode the account the
// request came from, else the default tenant.
func (a *API) tenant(m *nats.Msg) (tenancy.TenantID, error) {
	if !a.cfg.Accounts.Enabled() {
		return tenancy.TenantID{}, nil
	}
	return a.cfg.Accounts.TenantOf(m.Header.Get(auth.RequestInfoHeader))
}

// serve routes one request (not MSG.NEXT) and returns its answer.
func (a *API) serve(ctx context.Context, r request) any {
	t := r.tokens
	at := func(i int) string {
		if i < len(t) {
			return t[i]
		}
		return ""
	}
	switch {
	case len(t) == 1 && t[0] == "INFO":
		return a.accountInfo(ctx, r)
	case at(0) == "STREAM" && at(1) == "INFO" && len(t) == 3:
		return a.streamInfo(ctx, r, t[2])
	case at(0) == "STREAM" && (at(1) == "LIST" || at(1) == "NAMES") && len(t) == 2:
		return a.streamList(ctx, r, t[1] == "NAMES")
	case at(0) == "STREAM":
		return a.streamRefusal(t)
	case at(0) == "CONSUMER" && at(1) == "CREATE" && len(t) >= 3:
		return a.createConsumer(ctx, r, t[2], at(3), strings.Join(t[min(4, len(t)):], "."), false)
	case at(0) == "CONSUMER" && at(1) == "DURABLE" && at(2) == "CREATE" && len(t) >= 4:
		if len(t) != 5 {
			return apiResponse{Type: typeConsumerCreate, Error: errDurableNotInSubject}
		}
		return a.createConsumer(ctx, r, t[3], t[4], "", true)
	case at(0) == "CONSUMER" && at(1) == "INFO" && len(t) == 4:
		return a.consumerInfo(ctx, r, t[2], t[3])
	case at(0) == "CONSUMER" && at(1) == "DELETE" && len(t) == 4:
		return a.deleteConsumer(ctx, r, t[2], t[3])
	case at(0) == "CONSUMER" && (at(1) == "NAMES" || at(1) == "LIST") && len(t) == 3:
		return a.consumerList(ctx, r, t[2], t[1] == "NAMES")
	case at(0) == "CONSUMER":
		return a.consumerRefusal(t)
	}
	return apiResponse{Type: typeError, Error: errNotSupported(a.prefix + strings.Join(t, "."))}
}

// answer renders v and sends it to reply.
func (a *API) answer(reply string, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)              // subjects hold '>', which people read in the CLI's -j output
	if err := enc.Encode(v); err != nil { // the types above always encode; say so if one does not
		a.cfg.Logger.Error().Str("target", "jetstream").Err(err).Msg("API answer not encoded")
		return
	}
	body := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if failed(v) {
		a.n.errors.Add(1)
	}
	if err := a.cfg.NATS.Publish(reply, body); err != nil {
		a.cfg.Logger.Debug().Str("target", "jetstream").Err(err).Msg("API answer not sent")
	}
}

// failed reports whether an answer is an API error.
func failed(v any) bool {
	type erred interface{ apiErr() *apiError }
	e, ok := v.(erred)
	return ok && e.apiErr() != nil
}

func (r apiResponse) apiErr() *apiError { return r.Error }

// status sends a status message (a header block, empty body) to the
// tenant's reply.
func (a *API) status(tenant tenancy.TenantID, reply string, header []byte) {
	if reply == "" {
		return
	}
	if err := a.cfg.Status.Publish(tenant, reply, "", header, nil); err != nil && statusLog.Allow() {
		a.cfg.Logger.Warn().Str("target", "jetstream").Err(err).Msg("status message not sent")
	}
}

// statusLog limits the warning for status messages that were not sent.
var statusLog = every.New(10 * time.Second)

// typeFor is the answer type of an API subject's tokens, for errors
// answered before the request is routed.
func typeFor(t []string) string {
	switch {
	case len(t) == 1 && t[0] == "INFO":
		return typeAccountInfo
	case len(t) >= 2 && t[0] == "STREAM":
		switch t[1] {
		case "INFO":
			return typeStreamInfo
		case "LIST":
			return typeStreamList
		case "NAMES":
			return typeStreamNames
		}
	case len(t) >= 2 && t[0] == "CONSUMER":
		switch t[1] {
		case "CREATE", "DURABLE":
			return typeConsumerCreate
		case "INFO":
			return typeConsumerInfo
		case "DELETE":
			return typeConsumerDelete
		case "NAMES":
			return typeConsumerNames
		case "LIST":
			return typeConsumerList
		}
	}
	return typeError
}
