package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
)

// Item is one message to push.
type Item struct {
	Queue     string
	Partition string          // "" is Default
	Payload   json.RawMessage // any JSON value; nil is null
	// TransactionID identifies the message for deduplication; "" lets the
	// client fix one (a UUIDv7) before the first attempt.
	TransactionID string
	TraceID       string
}

// Status of a pushed item.
const (
	Queued    = "queued"    // committed
	Duplicate = "duplicate" // already stored; nothing written
	Buffered  = "buffered"  // fsynced in the bridge's spool; written later, exactly once
	Failed    = "failed"    // neither stored nor spooled
)

// Result is what one item was answered.
type Result struct {
	Index         int       `json:"index"`
	Status        string    `json:"status"`
	MessageID     string    `json:"messageId"`
	TransactionID string    `json:"transactionId"`
	Queue         string    `json:"queue"`
	Partition     string    `json:"partition"`
	Offset        int64     `json:"offset"`
	CreatedAt     time.Time `json:"createdAt"`
	Error         string    `json:"error"`
}

// Stored reports whether the item is stored or will be (queued, duplicate,
// buffered).
func (r Result) Stored() bool {
	return r.Status == Queued || r.Status == Duplicate || r.Status == Buffered
}

// Config says how to reach the bridge and how hard to try.
type Config struct {
	// NATS is the connection to push over (its options carry credentials,
	// TLS and the tenant's account). Either NATS or HTTPURL is required.
	NATS *nats.Conn
	// Prefix of the subjects. Default "queen".
	Prefix string
	// Tenant, in the single-account mode only, pushes on
	// <prefix>.v1.push.<tenant>; "" is the default tenant (and the accounts
	// mode, where the account decides). Default "".
	Tenant string
	// HTTPURL is the bridge's HTTP address (http://host:6632) when pushing
	// over HTTP. Default "".
	HTTPURL string
	// Token is the HTTP bearer token. Default "".
	Token string
	// HTTPClient for HTTP pushes. Default http.DefaultClient.
	HTTPClient *http.Client
	// AttemptTimeout bounds one attempt. Default 10s.
	AttemptTimeout time.Duration
	// RetryBudget bounds the time spent retrying one Push. Default 30s.
	RetryBudget time.Duration
	// MinBackoff and MaxBackoff bound the wait between attempts, which
	// doubles from the first (with jitter). Defaults 50ms and 2s.
	MinBackoff, MaxBackoff time.Duration
	// OnRetry, when set, hears of every attempt that will be followed by
	// another: the attempt (0 for the first) and why (for logs, metrics).
	// Default nil.
	OnRetry func(attempt int, err error)
	// PartitionAware, over NATS, sends each part of a push to the bridge
	// that owns its partitions, on that bridge's own subject, from the
	// bridges' owners' table (read at New, renewed by their
	// announcements); a part whose owner does not answer goes to the
	// shared subject (docs/ownership.md). Call Close when done. Default
	// false.
	PartitionAware bool
	// OwnerTimeout bounds a part's wait on its owner's own subject before
	// it goes to the shared subject, and a read of the owners' table.
	// Default 2s.
	OwnerTimeout time.Duration
}

// Client pushes items. It is safe for concurrent use.
type Client struct {
	cfg     Config
	subject string
	own     *owners // the owners' table; nil unless PartitionAware
}

// New validates cfg.
func New(cfg Config) (*Client, error) {
	if (cfg.NATS == nil) == (cfg.HTTPURL == "") {
		return nil, errors.New("client: set exactly one of Config.NATS and Config.HTTPURL")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "queen"
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.AttemptTimeout == 0 {
		cfg.AttemptTimeout = 10 * time.Second
	}
	if cfg.RetryBudget == 0 {
		cfg.RetryBudget = 30 * time.Second
	}
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff = 50 * time.Millisecond
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 2 * time.Second
	}
	if cfg.OwnerTimeout == 0 {
		cfg.OwnerTimeout = 2 * time.Second
	}
	c := &Client{cfg: cfg, subject: cfg.Prefix + ".v1.push"}
	if cfg.Tenant != "" {
		c.subject += "." + cfg.Tenant
	}
	if cfg.PartitionAware {
		if cfg.NATS == nil {
			return nil, errors.New("client: Config.PartitionAware needs Config.NATS")
		}
		if err := c.startOwners(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Close ends a partition-aware client's subscription to the owners'
// announcements and waits for a table read under way. Pushes after it go
// on with the table it had. Without PartitionAware it does nothing.
func (c *Client) Close() {
	if c.own == nil {
		return
	}
	_ = c.own.sub.Unsubscribe()
	c.own.mu.Lock()
	c.own.closed = true // no fetch starts after this, so Wait has no Add to race with
	c.own.mu.Unlock()
	c.own.fetchWG.Wait()
}

// RequestError is a request (a push, a pop, an acknowledgement) the bridge
// refused as a whole, with its status.
type RequestError struct {
	Status  int
	Message string
}

func (e *RequestError) Error() string {
	return fmt.Sprintf("client: request refused (%d): %s", e.Status, e.Message)
}

// retryable reports whether a refusal may pass on a later attempt.
func (e *RequestError) retryable() bool {
	return e.Status == http.StatusServiceUnavailable || e.Status == http.StatusRequestTimeout || e.Status >= 500 && e.Status != http.StatusNotImplemented
}

// ErrGaveUp: the retry budget ran out with items still failed or
// unanswered; their results say failed.
var ErrGaveUp = errors.New("client: retry budget spent")

// Push sends items and returns one result per item, in order. Items that
// an attempt left failed (or that a retryable error left unanswered) are
// sent again, with the same transactionIds, until they are stored or the
// retry budget is spent (ErrGaveUp, with the last results). A refusal that
// will not pass on retry returns a *RequestError.
func (c *Client) Push(ctx context.Context, items ...Item) ([]Result, error) {
	items = append([]Item(nil), items...)
	for i := range items {
		if items[i].TransactionID == "" {
			items[i].TransactionID = uuid.Must(uuid.NewV7()).String()
		}
	}
	results := make([]Result, len(items))
	pending := make([]int, len(items)) // indexes still to be stored
	for i := range pending {
		pending[i] = i
		results[i] = Result{Index: i, Status: Failed, TransactionID: items[i].TransactionID, Queue: items[i].Queue, Partition: items[i].Partition}
	}
	r := c.newRetry()
	var lastErr error
	for attempt := 0; ; attempt++ {
		batch := make([]Item, len(pending))
		for k, i := range pending {
			batch[k] = items[i]
		}
		rs, err := c.attempt(ctx, batch)
		var refused *RequestError
		switch {
		case errors.As(err, &refused) && !refused.retryable():
			return results, err
		case err != nil:
			lastErr = err
		default:
			var still []int
			for k, i := range pending {
				r := rs[k]
				r.Index = i
				results[i] = r
				if !r.Stored() {
					still = append(still, i)
				}
			}
			pending = still
			if len(pending) == 0 {
				return results, nil
			}
			lastErr = fmt.Errorf("%d items failed, the first: %s", len(pending), results[pending[0]].Error)
		}
		if err := r.pause(ctx, attempt, lastErr); err != nil {
			return results, err
		}
	}
}

// wireItem is an item as the bridge reads it.
type wireItem struct {
	Queue         string          `json:"queue"`
	Partition     string          `json:"partition,omitempty"`
	Payload       json.RawMessage `json:"payload"`
	TransactionID string          `json:"transactionId"`
	TraceID       string          `json:"traceId,omitempty"`
}

// wire is it as the bridge reads it: no payload is JSON null.
func wire(it Item) wireItem {
	p := it.Payload
	if p == nil {
		p = json.RawMessage("null")
	}
	return wireItem{Queue: it.Queue, Partition: it.Partition, Payload: p, TransactionID: it.TransactionID, TraceID: it.TraceID}
}

// attempt sends one push (or, partition-aware, one part per owner) and
// decodes its answer.
func (c *Client) attempt(ctx context.Context, items []Item) ([]Result, error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.AttemptTimeout)
	defer cancel()
	if c.own != nil {
		return c.overOwners(actx, items)
	}
	return c.overSubject(actx, c.subject, items)
}

// overSubject sends one push of items (over NATS on subject, or over HTTP)
// and decodes its answer.
func (c *Client) overSubject(actx context.Context, subject string, items []Item) ([]Result, error) {
	body := struct {
		Items []wireItem `json:"items"`
	}{Items: make([]wireItem, len(items))}
	for i, it := range items {
		body.Items[i] = wire(it)
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("client: encode: %w", err)
	}
	var status int
	var answer []byte
	if c.cfg.NATS != nil {
		status, answer, err = c.overNATS(actx, subject, data)
	} else {
		status, answer, err = c.overHTTP(actx, data)
	}
	if err != nil {
		return nil, err
	}
	if status != http.StatusCreated && status != http.StatusOK && status != http.StatusInternalServerError {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(answer, &e)
		return nil, &RequestError{Status: status, Message: e.Error}
	}
	var rs []Result
	if err := json.Unmarshal(answer, &rs); err != nil || len(rs) != len(items) {
		return nil, fmt.Errorf("client: answer of %d bytes is not %d results: %v", len(answer), len(items), err)
	}
	return rs, nil
}

func (c *Client) overNATS(ctx context.Context, subject string, data []byte) (int, []byte, error) {
	msg, err := c.cfg.NATS.RequestWithContext(ctx, subject, data)
	if err != nil {
		return 0, nil, fmt.Errorf("client: nats request: %w", err) // timeouts and no responders are retried
	}
	if code := msg.Header.Get("Nats-Service-Error-Code"); code != "" {
		n, _ := strconv.Atoi(code)
		return n, msg.Data, nil
	}
	return http.StatusCreated, msg.Data, nil
}

func (c *Client) overHTTP(ctx context.Context, data []byte) (int, []byte, error) {
	return c.httpCall(ctx, http.MethodPost, "/api/v1/push", data)
}
