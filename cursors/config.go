package cursors

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// JetStream's defaults for what a create leaves zero.
const (
	defaultAckWait       = 30 * time.Second
	defaultMaxAckPending = 1000
	defaultMaxWaiting    = 512
	defaultEphemeralIdle = 5 * time.Second
)

// withDefaults fills what JetStream fills when a create leaves it zero:
// the config echoed to clients and applied to deliveries.
func (c ConsumerConfig) withDefaults() ConsumerConfig {
	if c.Name == "" {
		c.Name = c.Durable
	}
	if c.AckWait <= 0 {
		c.AckWait = defaultAckWait
	}
	if c.MaxDeliver == 0 {
		c.MaxDeliver = -1
	}
	if c.MaxAckPending == 0 {
		c.MaxAckPending = defaultMaxAckPending
	}
	if c.MaxWaiting == 0 {
		c.MaxWaiting = defaultMaxWaiting
	}
	if c.Durable == "" && c.InactiveThreshold == 0 {
		c.InactiveThreshold = defaultEphemeralIdle
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	return c
}

// check refuses what the engine cannot serve faithfully, naming the field.
// streamFilters are the stream's subjects: a filter must fall inside them.
func (c *ConsumerConfig) check(streamFilters []string) error {
	name := c.ConsumerName()
	if name == "" {
		return invalid(codeInvalidConfig, "a consumer needs a name or durable_name")
	}
	if c.Durable != "" && c.Name != "" && c.Durable != c.Name {
		return invalid(codeInvalidConfig, "name %q and durable_name %q differ", c.Name, c.Durable)
	}
	if len(name) > 255 || strings.ContainsAny(name, ".*> \t\r\n") {
		return invalid(codeInvalidConfig, "consumer name %q: 1..255 bytes, no '.', '*', '>' or white space", name)
	}
	if c.MaxDeliver < -1 || c.MaxDeliver == 1 && len(c.BackOff) > 1 {
		return invalid(codeMaxDeliverBack, "max_deliver %d with %d backoff steps", c.MaxDeliver, len(c.BackOff))
	}
	if c.MaxDeliver > 0 && len(c.BackOff) > c.MaxDeliver {
		return invalid(codeMaxDeliverBack, "backoff has %d steps, more than max_deliver %d", len(c.BackOff), c.MaxDeliver)
	}
	for _, d := range c.BackOff {
		if d <= 0 {
			return invalid(codeBackOffNeg, "backoff steps must be positive, not %s", d)
		}
	}
	if c.AckPolicy == AckNone && (len(c.BackOff) > 0 || c.MaxDeliver > 1) {
		return invalid(codeInvalidPolicy, "ack_policy none takes no backoff and no max_deliver")
	}
	for _, f := range c.filters() {
		if f == "" || strings.ContainsAny(f, " \t\r\n") {
			return invalid(codeInvalidConfig, "filter subject %q is empty or holds white space", f)
		}
		inside := false
		for _, s := range streamFilters {
			if subsetOf(f, s) {
				inside = true
				break
			}
		}
		if !inside {
			return invalid(codeFilterSubset, "filter subject %q is not a subset of the stream's subjects %v", f, streamFilters)
		}
	}
	switch c.DeliverPolicy {
	case DeliverByStartSequence:
		if c.OptStartSeq == 0 {
			return invalid(codeInvalidPolicy, "deliver_policy by_start_sequence needs opt_start_seq")
		}
		if _, ok := pinnedPartition(c.filters(), streamFilters); !ok {
			return invalid(codeBadRequest, "bad request: deliver_policy by_start_sequence needs a filter naming one subject of one partition: sequences are partition offsets")
		}
	case DeliverByStartTime:
		if c.OptStartTime.IsZero() {
			return invalid(codeInvalidPolicy, "deliver_policy by_start_time needs opt_start_time")
		}
	}
	if c.DeliverPolicy != DeliverByStartSequence && c.OptStartSeq != 0 {
		return invalid(codeInvalidPolicy, "opt_start_seq is only for deliver_policy by_start_sequence")
	}
	if c.DeliverPolicy != DeliverByStartTime && !c.OptStartTime.IsZero() {
		return invalid(codeInvalidPolicy, "opt_start_time is only for deliver_policy by_start_time")
	}
	return nil
}

// subsetOf reports whether every subject matching f matches s.
func subsetOf(f, s string) bool {
	ft := strings.Split(f, ".")
	st := strings.Split(s, ".")
	for i, t := range st {
		if t == ">" {
			return i < len(ft)
		}
		if i >= len(ft) {
			return false
		}
		if ft[i] == ">" {
			return false
		}
		if t != "*" && (ft[i] == "*" || ft[i] != t) {
			return false
		}
	}
	return len(ft) == len(st)
}

// pinnedPartition is the one partition the filter's subjects fall in: one
// literal subject, which the intake maps to the partition its stream
// filter's wildcards match (or Default under a literal stream filter).
func pinnedPartition(filters, streamFilters []string) (string, bool) {
	if len(filters) != 1 || strings.ContainsAny(filters[0], "*>") {
		return "", false
	}
	subject := filters[0]
	for _, s := range streamFilters {
		if !subjectMatches(s, subject) {
			continue
		}
		if !strings.ContainsAny(s, "*>") {
			return "Default", true
		}
		return partitionOf(s, subject), true
	}
	return "", false
}

// partitionOf is the tokens of subject that filter's wildcards matched,
// joined with '.' (the intake's rule).
func partitionOf(filter, subject string) string {
	ft := strings.Split(filter, ".")
	st := strings.Split(subject, ".")
	var out []string
	for i, t := range ft {
		switch t {
		case "*":
			out = append(out, st[i])
		case ">":
			out = append(out, st[i:]...)
		}
	}
	return strings.Join(out, ".")
}

// encodeConfig is the engine's encoding of a config in the Store: JSON of
// the Go fields, so that an equal config encodes to equal bytes.
func encodeConfig(c ConsumerConfig) []byte {
	b, err := json.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("cursors: a consumer config does not encode: %v", err)) // plain fields: cannot happen
	}
	return b
}

// decodeConfig reads a stored config.
func decodeConfig(name string, b []byte) (ConsumerConfig, error) {
	var c ConsumerConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("cursors: stored config of consumer %s: %w", name, err)
	}
	return c, nil
}
