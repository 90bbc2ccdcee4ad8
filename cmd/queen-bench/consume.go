package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
)

// consumer pops and acknowledges over one transport.
type consumer struct {
	o      options
	group  string
	nc     *nats.Conn
	client *http.Client
}

type poppedWire struct {
	Messages []struct {
		TransactionID string          `json:"transactionId"`
		PartitionID   string          `json:"partitionId"`
		LeaseID       string          `json:"leaseId"`
		Data          json.RawMessage `json:"data"`
	} `json:"messages"`
}

// pop asks for up to -consume-batch messages of queue, waiting up to a
// second.
func (c *consumer) pop(queue string) (*poppedWire, error) {
	var answer []byte
	if c.nc != nil {
		body := fmt.Sprintf(`{"queue":%q,"consumerGroup":%q,"batch":%d,"partitions":%d,"wait":true,"timeout":1000}`,
			queue, c.group, c.o.consumeBatch, c.o.consumePartitions)
		m, err := c.nc.Request(c.o.prefix+".v1.pop", []byte(body), 30*time.Second)
		if err != nil {
			return nil, err
		}
		if code := m.Header.Get("Nats-Service-Error-Code"); code != "" {
			return nil, fmt.Errorf("pop: error %s: %s", code, m.Header.Get("Nats-Service-Error"))
		}
		answer = m.Data
	} else {
		q := url.Values{"consumerGroup": {c.group}, "batch": {strconv.Itoa(c.o.consumeBatch)}, "partitions": {strconv.Itoa(c.o.consumePartitions)},
			"wait": {"true"}, "timeout": {"1000"}}
		resp, err := c.client.Get("http://" + c.o.httpAddr + "/api/v1/pop/queue/" + url.PathEscape(queue) + "?" + q.Encode())
		if err != nil {
			return nil, err
		}
		answer, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if resp.StatusCode == http.StatusNoContent {
			return &poppedWire{}, nil
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("pop: HTTP %d: %s", resp.StatusCode, answer)
		}
	}
	var p poppedWire
	if len(answer) == 0 {
		return &p, nil
	}
	if err := json.Unmarshal(answer, &p); err != nil {
		return nil, fmt.Errorf("pop answer: %w", err)
	}
	return &p, nil
}

// ack acknowledges a batch in one request and answers how many succeeded.
func (c *consumer) ack(p *poppedWire) (int, error) {
	body := make([]byte, 0, 64+len(p.Messages)*120)
	body = append(body, `{"consumerGroup":`...)
	body = strconv.AppendQuote(body, c.group)
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
	body = append(body, `]}`...)
	var answer []byte
	if c.nc != nil {
		m, err := c.nc.Request(c.o.prefix+".v1.ack", body, 30*time.Second)
		if err != nil {
			return 0, err
		}
		answer = m.Data
	} else {
		resp, err := c.client.Post("http://"+c.o.httpAddr+"/api/v1/ack/batch", "application/json", bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		answer, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, err
		}
	}
	return bytes.Count(answer, []byte(`"success":true`)), nil
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
