package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
)

// consumer pops and acknowledges over one transport. A group's consumer is
// shared; each consuming goroutine works with its own(), whose buffers it
// reuses from one pop and acknowledgement to the next.
type consumer struct {
	o      options
	group  string
	nc     *nats.Conn
	client *http.Client

	dec      popDecoder
	popQueue string       // the queue popBody and popURL are for
	popBody  []byte       // over NATS
	popURL   string       // over HTTP
	answer   bytes.Buffer // over HTTP: the last pop answer
	ackBody  []byte
	ackIn    bytes.Buffer // over HTTP: the last acknowledgement answer
}

// own is a consumer of the same group for one goroutine.
func (c *consumer) own() *consumer {
	return &consumer{o: c.o, group: c.group, nc: c.nc, client: c.client}
}

// pop asks for up to -consume-batch messages of queue, waiting up to a
// second. The answer is valid until the next pop.
func (c *consumer) pop(queue string) (*poppedWire, error) {
	if queue != c.popQueue || (c.popBody == nil && c.popURL == "") {
		c.popQueue = queue
		c.popBody, c.popURL = c.popRequest(queue)
	}
	var answer []byte
	if c.nc != nil {
		m, err := c.nc.Request(c.o.prefix+".v1.pop", c.popBody, 30*time.Second)
		if err != nil {
			return nil, err
		}
		if code := m.Header.Get("Nats-Service-Error-Code"); code != "" {
			return nil, fmt.Errorf("pop: error %s: %s", code, m.Header.Get("Nats-Service-Error"))
		}
		answer = m.Data
	} else {
		resp, err := c.client.Get(c.popURL)
		if err != nil {
			return nil, err
		}
		c.answer.Reset()
		_, err = c.answer.ReadFrom(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		answer = c.answer.Bytes()
		if resp.StatusCode == http.StatusNoContent {
			answer = nil
		} else if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("pop: HTTP %d: %s", resp.StatusCode, answer)
		}
	}
	p, err := c.dec.decode(answer)
	if err != nil {
		return nil, fmt.Errorf("pop answer: %w", err)
	}
	return p, nil
}

// popRequest is the body (NATS) or the URL (HTTP) of a pop of queue.
func (c *consumer) popRequest(queue string) (body []byte, u string) {
	if c.nc != nil {
		return fmt.Appendf(nil, `{"queue":%q,"consumerGroup":%q,"batch":%d,"partitions":%d,"wait":true,"timeout":1000}`,
			queue, c.group, c.o.consumeBatch, c.o.consumePartitions), ""
	}
	q := url.Values{"consumerGroup": {c.group}, "batch": {strconv.Itoa(c.o.consumeBatch)}, "partitions": {strconv.Itoa(c.o.consumePartitions)},
		"wait": {"true"}, "timeout": {"1000"}}
	return nil, "http://" + c.o.httpAddr + "/api/v1/pop/queue/" + url.PathEscape(queue) + "?" + q.Encode()
}

// ack acknowledges a batch in one request and answers how many succeeded.
func (c *consumer) ack(p *poppedWire) (int, error) {
	body := appendAckBody(c.ackBody[:0], c.group, p)
	c.ackBody = body
	// A refusal answers no success: the count says it.
	answer, _, err := c.request(".v1.ack", "/api/v1/ack/batch", body)
	if err != nil {
		return 0, err
	}
	return bytes.Count(answer, []byte(`"success":true`)), nil
}

// request sends body to the bridge, over NATS on the prefix's subject or
// over HTTP to path, and answers the reply (over HTTP in c.ackIn, good
// until the next request) and refused, the bridge's error status if it
// answered one.
func (c *consumer) request(subject, path string, body []byte) (answer []byte, refused, err error) {
	if c.nc != nil {
		// Request has copied body into the connection's buffer when it
		// returns: the next request may reuse it.
		m, err := c.nc.Request(c.o.prefix+subject, body, 30*time.Second)
		if err != nil {
			return nil, nil, err
		}
		if code := m.Header.Get("Nats-Service-Error-Code"); code != "" {
			refused = fmt.Errorf("error %s: %s", code, m.Header.Get("Nats-Service-Error"))
		}
		return m.Data, refused, nil
	}
	// A RoundTripper may still read a request body after it answers:
	// this one is the request's own.
	resp, err := c.client.Post("http://"+c.o.httpAddr+path, "application/json", bytes.NewReader(bytes.Clone(body)))
	if err != nil {
		return nil, nil, err
	}
	c.ackIn.Reset()
	_, err = c.ackIn.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, nil, err
	}
	answer = c.ackIn.Bytes()
	if resp.StatusCode != http.StatusOK {
		refused = fmt.Errorf("HTTP %d: %s", resp.StatusCode, answer)
	}
	return answer, refused, nil
}

// appendAckBody appends the batch acknowledgement of every message of p,
// completed, for group.
func appendAckBody(body []byte, group string, p *poppedWire) []byte {
	body = append(body, `{"consumerGroup":`...)
	body = strconv.AppendQuote(body, group)
	body = append(body, `,"acknowledgments":[`...)
	for i, m := range p.Messages {
		if i > 0 {
			body = append(body, ',')
		}
		body = strconv.AppendQuote(append(body, `{"transactionId":`...), m.TransactionID)
		body = strconv.AppendQuote(append(body, `,"partitionId":`...), m.PartitionID)
		body = strconv.AppendQuote(append(body, `,"leaseId":`...), m.LeaseID)
		body = append(body, `,"status":"completed"}`...)
	}
	return append(body, `]}`...)
}

// sentAt reads the send time a producer put in the payload.
func sentAt(data []byte) (time.Time, bool) {
	i := bytes.Index(data, []byte(`"t":`))
	if i < 0 {
		return time.Time{}, false
	}
	rest := data[i+4:]
	j := bytes.IndexByte(rest, ',')
	if j < 0 {
		return time.Time{}, false
	}
	ns, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}
