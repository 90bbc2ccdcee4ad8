package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Message is one popped message.
type Message struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	TraceID       string          `json:"traceId"`
	Data          json.RawMessage `json:"data"` // the payload exactly as pushed
	// Encoding is "base64" when Data is the base64 string of a body that
	// was not JSON (a JetStream publish); "" otherwise.
	Encoding      string    `json:"encoding"`
	CreatedAt     time.Time `json:"createdAt"`
	PartitionID   string    `json:"partitionId"`
	Partition     string    `json:"partition"`
	LeaseID       string    `json:"leaseId"`
	ConsumerGroup string    `json:"consumerGroup"`
}

// Handler processes one popped batch. Returning nil acknowledges every
// message completed; an error acknowledges every message failed (the
// bridge delivers them again up to the queue's retryLimit, then moves them
// to the dead letters). The context ends when Consume's does.
type Handler func(ctx context.Context, msgs []Message) error

// ConsumeOptions tune Consume. Zero values take the defaults.
type ConsumeOptions struct {
	// Batch is the most messages one pop delivers. Default 100.
	Batch int
	// Partitions is how many partitions one pop may claim. Default 1.
	Partitions int
	// Partition, when set, consumes that partition only.
	Partition string
	// Wait is how long a pop parks on the bridge when there is nothing to
	// deliver; over NATS never past the context's deadline, which the pop
	// carries (expiresMs). Default 30s.
	Wait time.Duration
	// AutoAck moves the cursor at pop: no lease, no acknowledgement, a
	// batch the handler fails is not delivered again. Default false.
	AutoAck bool
	// SubscriptionMode ("all", "new") and SubscriptionFrom ("now" or an
	// RFC 3339 time) choose where a new named group starts.
	SubscriptionMode, SubscriptionFrom string
	// RenewEvery is how often the lease of a batch in the handler is
	// extended, by LeaseSeconds. Defaults 20s and 60.
	RenewEvery   time.Duration
	LeaseSeconds int
	// OnAck, when set, hears the bridge's answer to each batch's
	// acknowledgement (after it arrived). Default nil.
	OnAck func(msgs []Message, results []AckResult)
	// OnError hears of pops and acknowledgements that failed (the bridge
	// away, a restart); Consume retries them with backoff. Default nil.
	OnError func(error)
}

func (o *ConsumeOptions) defaults() {
	if o.Batch == 0 {
		o.Batch = 100
	}
	if o.Partitions == 0 {
		o.Partitions = 1
	}
	if o.Wait == 0 {
		o.Wait = 30 * time.Second
	}
	if o.RenewEvery == 0 {
		o.RenewEvery = 20 * time.Second
	}
	if o.LeaseSeconds == 0 {
		o.LeaseSeconds = 60
	}
}

// AckResult is the bridge's answer to one acknowledgement.
type AckResult struct {
	Index         int     `json:"index"`
	TransactionID string  `json:"transactionId"`
	Success       bool    `json:"success"`
	Error         *string `json:"error"`
	LeaseReleased bool    `json:"leaseReleased"`
	DLQ           bool    `json:"dlq"`
}

// Consume pops batches of queue for group ("" is Queen's queue mode, where
// consumers compete) and hands each to h, then acknowledges the batch in
// one request; while h runs, the batch's lease is extended every
// RenewEvery. Pops and acknowledgements that fail are retried with
// backoff (a bridge restart costs a pause, not the consumer); a batch whose
// acknowledgement never arrives is delivered again once its lease expires.
// It returns when ctx ends (nil), or on a refusal that will not pass on
// retry (a bad queue name, a token without the right, a message larger
// than a NATS answer carries: 413, pop it over HTTP). A pop out over NATS
// when ctx ends is cancelled on the bridge (<prefix>.v1.pop.cancel, up to
// 2 s for its confirmation): nothing stays parked or claimed for a
// consumer that left.
func (c *Client) Consume(ctx context.Context, queue, group string, h Handler, opts ...ConsumeOptions) error {
	var o ConsumeOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	o.defaults()
	b := c.newBackoff()
	pause := func(err error) bool {
		if o.OnError != nil {
			o.OnError(err)
		}
		wait := b.next()
		select {
		case <-time.After(wait):
			return true
		case <-ctx.Done():
			return false
		}
	}
	for ctx.Err() == nil {
		msgs, err := c.pop(ctx, queue, group, o)
		var refused *RequestError
		if errors.As(err, &refused) && !refused.retryable() {
			return err
		}
		if err != nil {
			if !pause(err) {
				break
			}
			continue
		}
		b = c.newBackoff()
		if len(msgs) == 0 {
			continue
		}
		herr := c.handle(ctx, msgs, h, o)
		if o.AutoAck {
			continue
		}
		status, text := "completed", ""
		if herr != nil {
			status, text = "failed", herr.Error()
		}
		if ctx.Err() != nil {
			// Handled while ctx ended: one bounded attempt still tells the
			// bridge, so a stopping consumer does not leave the batch to be
			// delivered again after its lease. A failure then is likely the
			// stop itself: handed back as retry, which counts no attempt.
			if herr != nil {
				status = "retry"
			}
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.AttemptTimeout)
			if rs, err := c.Ack(actx, group, msgs, status, text); err == nil && o.OnAck != nil {
				o.OnAck(msgs, rs)
			}
			cancel()
			break
		}
		for ctx.Err() == nil {
			if rs, err := c.Ack(ctx, group, msgs, status, text); err == nil {
				if o.OnAck != nil {
					o.OnAck(msgs, rs)
				}
				break
			} else if errors.As(err, &refused) && !refused.retryable() {
				return err
			} else if !pause(err) {
				break
			}
		}
	}
	return nil
}

// handle runs h while a goroutine of its own extends the batch's leases.
func (c *Client) handle(ctx context.Context, msgs []Message, h Handler, o ConsumeOptions) error {
	leases := map[string]bool{}
	for _, m := range msgs {
		if m.LeaseID != "" {
			leases[m.LeaseID] = true
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if len(leases) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(o.RenewEvery)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				case <-t.C:
				}
				for l := range leases {
					if _, err := c.ExtendLease(ctx, l, o.LeaseSeconds); err != nil && o.OnError != nil {
						o.OnError(err)
					}
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	return h(ctx, msgs)
}

// popWire is a pop's fields, as the NATS body.
type popWire struct {
	Queue            string `json:"queue"`
	Partition        string `json:"partition,omitempty"`
	Batch            int    `json:"batch"`
	Wait             bool   `json:"wait"`
	TimeoutMs        int    `json:"timeout"`
	ConsumerGroup    string `json:"consumerGroup,omitempty"`
	AutoAck          bool   `json:"autoAck"`
	SubscriptionMode string `json:"subscriptionMode,omitempty"`
	SubscriptionFrom string `json:"subscriptionFrom,omitempty"`
	Partitions       int    `json:"partitions"`
	// RequestID names the pop for its cancel; ExpiresMs is how long this
	// client waits for the answer, so that the bridge never parks the pop
	// past it (NATS only).
	RequestID string `json:"requestId,omitempty"`
	ExpiresMs int64  `json:"expiresMs,omitempty"`
}

// cancelWait bounds how long a pop's cancel waits for the bridge that has
// the pop to confirm it.
const cancelWait = 2 * time.Second

// cancelPop tells the bridges that this client stopped waiting for the
// pop named id (its context ended): the bridge that has it stops it and
// hands back anything it claimed for it, also when the answer was already
// on its way. It waits for that bridge's confirmation, at most cancelWait,
// so that what the pop held is free when Consume returns.
func (c *Client) cancelPop(ctx context.Context, id string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(cancelWait, c.cfg.AttemptTimeout))
	defer cancel()
	data, _ := json.Marshal(map[string]string{"requestId": id})
	_, _ = c.cfg.NATS.RequestWithContext(cctx, c.cfg.Prefix+".v1.pop.cancel", data)
}

// newRequestID is a random id for one pop.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// pop makes one pop; no messages when it found none before its wait ended.
func (c *Client) pop(ctx context.Context, queue, group string, o ConsumeOptions) ([]Message, error) {
	w := popWire{Queue: queue, Partition: o.Partition, Batch: o.Batch, Wait: o.Wait > 0, TimeoutMs: int(o.Wait.Milliseconds()),
		ConsumerGroup: group, AutoAck: o.AutoAck, SubscriptionMode: o.SubscriptionMode, SubscriptionFrom: o.SubscriptionFrom, Partitions: o.Partitions}
	actx, cancel := context.WithTimeout(ctx, o.Wait+c.cfg.AttemptTimeout)
	defer cancel()
	var status int
	var answer []byte
	var err error
	if c.cfg.NATS != nil {
		w.RequestID = newRequestID()
		if dl, ok := actx.Deadline(); ok {
			w.ExpiresMs = max(time.Until(dl).Milliseconds(), 1)
		}
		data, _ := json.Marshal(w)
		status, answer, err = c.natsCall(actx, c.cfg.Prefix+".v1.pop", data)
		if err != nil && actx.Err() != nil {
			c.cancelPop(ctx, w.RequestID)
		}
	} else {
		q := url.Values{}
		q.Set("batch", strconv.Itoa(w.Batch))
		q.Set("wait", strconv.FormatBool(w.Wait))
		q.Set("timeout", strconv.Itoa(w.TimeoutMs))
		q.Set("partitions", strconv.Itoa(w.Partitions))
		q.Set("autoAck", strconv.FormatBool(w.AutoAck))
		for k, v := range map[string]string{"consumerGroup": group, "subscriptionMode": w.SubscriptionMode, "subscriptionFrom": w.SubscriptionFrom} {
			if v != "" {
				q.Set(k, v)
			}
		}
		path := "/api/v1/pop/queue/" + url.PathEscape(queue)
		if o.Partition != "" {
			path += "/partition/" + url.PathEscape(o.Partition)
		}
		status, answer, err = c.httpCall(actx, http.MethodGet, path+"?"+q.Encode(), nil)
	}
	if err != nil {
		return nil, err
	}
	if status == http.StatusNoContent || (status == http.StatusOK && len(answer) == 0) {
		return nil, nil
	}
	if status != http.StatusOK {
		return nil, refusal(status, answer)
	}
	var p struct {
		Messages []struct {
			Message
			TraceID *string `json:"traceId"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(answer, &p); err != nil {
		return nil, fmt.Errorf("client: pop answer: %w", err)
	}
	out := make([]Message, len(p.Messages))
	for i, m := range p.Messages {
		out[i] = m.Message
		if m.TraceID != nil {
			out[i].TraceID = *m.TraceID
		}
	}
	return out, nil
}

// Ack acknowledges messages in one request with one status (completed,
// failed, dlq, retry) and error text, and returns the bridge's answer per
// message (a message whose lease expired meanwhile is success false).
func (c *Client) Ack(ctx context.Context, group string, msgs []Message, status, errText string) ([]AckResult, error) {
	type ack struct {
		TransactionID string `json:"transactionId"`
		PartitionID   string `json:"partitionId"`
		Status        string `json:"status"`
		LeaseID       string `json:"leaseId,omitempty"`
		Error         string `json:"error,omitempty"`
	}
	body := struct {
		Acks          []ack  `json:"acknowledgments"`
		ConsumerGroup string `json:"consumerGroup,omitempty"`
	}{Acks: make([]ack, len(msgs)), ConsumerGroup: group}
	for i, m := range msgs {
		body.Acks[i] = ack{TransactionID: m.TransactionID, PartitionID: m.PartitionID, Status: status, LeaseID: m.LeaseID, Error: errText}
	}
	data, _ := json.Marshal(body)
	actx, cancel := context.WithTimeout(ctx, c.cfg.AttemptTimeout)
	defer cancel()
	answer, err := c.call(actx, c.cfg.Prefix+".v1.ack", http.MethodPost, "/api/v1/ack/batch", data)
	if err != nil {
		return nil, err
	}
	var rs []AckResult
	if err := json.Unmarshal(answer, &rs); err != nil || len(rs) != len(msgs) {
		return nil, fmt.Errorf("client: ack answer of %d bytes is not %d results: %v", len(answer), len(msgs), err)
	}
	return rs, nil
}

// ExtendLease extends a lease by seconds from now; false when it had
// expired or is unknown.
func (c *Client) ExtendLease(ctx context.Context, lease string, seconds int) (bool, error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.AttemptTimeout)
	defer cancel()
	var code int
	var answer []byte
	var err error
	if c.cfg.NATS != nil {
		data, _ := json.Marshal(map[string]any{"leaseId": lease, "seconds": seconds})
		code, answer, err = c.natsCall(actx, c.cfg.Prefix+".v1.lease", data)
	} else {
		data, _ := json.Marshal(map[string]any{"seconds": seconds})
		code, answer, err = c.httpCall(actx, http.MethodPost, "/api/v1/lease/"+url.PathEscape(lease)+"/extend", data)
	}
	if err != nil {
		return false, err
	}
	if code != http.StatusOK {
		return false, refusal(code, answer)
	}
	var rs []struct {
		Success bool `json:"success"`
	}
	if err := json.Unmarshal(answer, &rs); err != nil || len(rs) != 1 {
		return false, fmt.Errorf("client: lease answer: %s", answer)
	}
	return rs[0].Success, nil
}

func refusal(status int, answer []byte) error {
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(answer, &e)
	return &RequestError{Status: status, Message: e.Error}
}

// call makes one request, over NATS on subject or else over HTTP (method,
// path), and returns the answer of a 200; any other status is a
// *RequestError.
func (c *Client) call(ctx context.Context, subject, method, path string, data []byte) ([]byte, error) {
	var code int
	var answer []byte
	var err error
	if c.cfg.NATS != nil {
		code, answer, err = c.natsCall(ctx, subject, data)
	} else {
		code, answer, err = c.httpCall(ctx, method, path, data)
	}
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, refusal(code, answer)
	}
	return answer, nil
}

// natsCall sends a request; an error code header is the status, 200
// otherwise.
func (c *Client) natsCall(ctx context.Context, subject string, data []byte) (int, []byte, error) {
	msg, err := c.cfg.NATS.RequestWithContext(ctx, subject, data)
	if err != nil {
		return 0, nil, fmt.Errorf("client: nats request: %w", err)
	}
	if code := msg.Header.Get("Nats-Service-Error-Code"); code != "" {
		n, _ := strconv.Atoi(code)
		return n, msg.Data, nil
	}
	return http.StatusOK, msg.Data, nil
}

func (c *Client) httpCall(ctx context.Context, method, path string, data []byte) (int, []byte, error) {
	var body io.Reader
	if data != nil {
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.cfg.HTTPURL, "/")+path, body)
	if err != nil {
		return 0, nil, fmt.Errorf("client: %w", err)
	}
	if data != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("client: http: %w", err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("client: http answer: %w", err)
	}
	return resp.StatusCode, answer, nil
}
