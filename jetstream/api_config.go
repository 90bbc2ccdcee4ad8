package jetstream

import (
	"fmt"
	"strings"
	"time"
)

// Consumer configuration: the wire JSON to the engine's ConsumerConfig and
// back. What the bridge cannot do is refused here, before the engine sees
// it; the defaults nats-server fills in are filled in here too, so that
// what the engine stores is what a JetStream server would echo.

// The defaults nats-server applies (server/consumer.go,
// setConsumerConfigDefaults).
const (
	defaultAckWait           = 30 * time.Second
	defaultMaxWaiting        = 512
	defaultMaxAckPending     = 1000
	defaultInactiveEphemeral = 5 * time.Second
	maxNameLen               = 255      // JSMaxNameLen
	maxDescriptionLen        = 4 * 1024 // JSMaxDescriptionLen
)

var deliverPolicies = map[string]DeliverPolicy{
	"": DeliverAll, "all": DeliverAll, "last": DeliverLast, "new": DeliverNew,
	"by_start_sequence": DeliverByStartSequence, "by_start_time": DeliverByStartTime,
	"last_per_subject": DeliverLastPerSubject,
}

var deliverPolicyNames = map[DeliverPolicy]string{
	DeliverAll: "all", DeliverLast: "last", DeliverNew: "new",
	DeliverByStartSequence: "by_start_sequence", DeliverByStartTime: "by_start_time",
	DeliverLastPerSubject: "last_per_subject",
}

// A missing ack_policy is nats-server's zero value, none; nats.go and the
// CLI always send one.
var ackPolicies = map[string]AckPolicy{"": AckNone, "none": AckNone, "all": AckAll, "explicit": AckExplicit}

var ackPolicyNames = map[AckPolicy]string{AckNone: "none", AckAll: "all", AckExplicit: "explicit"}

// consumerConfig checks a requested configuration for stream s and turns it
// into the engine's, with nats-server's defaults filled in. now decides
// whether a pause_until is in the past (the CLI sends the zero time).
func consumerConfig(j *consumerConfigJSON, s *Stream, now time.Time) (ConsumerConfig, *apiError) {
	if r := unsupportedConfig(j, now); r != nil {
		return ConsumerConfig{}, r
	}
	c := ConsumerConfig{
		Name: j.Name, Durable: j.Durable, Description: j.Description,
		OptStartSeq: j.OptStartSeq, AckWait: j.AckWait, MaxDeliver: j.MaxDeliver,
		BackOff: j.BackOff, MaxAckPending: j.MaxAckPending, MaxWaiting: j.MaxWaiting,
		FilterSubject: j.FilterSubject, FilterSubjects: j.FilterSubjects,
		HeadersOnly: j.HeadersOnly, MaxRequestBatch: j.MaxRequestBatch,
		MaxRequestExpires: j.MaxExpires, MaxRequestMaxBytes: j.MaxBytes,
		InactiveThreshold: j.Inactive, Replicas: j.Replicas, MemoryStorage: j.MemoryStorage,
		Metadata: j.Metadata,
	}
	if j.OptStartTime != nil {
		c.OptStartTime = *j.OptStartTime
	}
	var ok bool
	if c.DeliverPolicy, ok = deliverPolicies[j.DeliverPolicy]; !ok {
		return c, errInvalidJSON(fmt.Errorf("can not unmarshal %q", j.DeliverPolicy))
	}
	if c.AckPolicy, ok = ackPolicies[j.AckPolicy]; !ok {
		return c, errAckPolicyInvalid
	}
	for _, n := range []struct{ what, name string }{{"name", c.Name}, {"durable name", c.Durable}} {
		if n.name == "" {
			continue
		}
		if len(n.name) > maxNameLen {
			return c, &apiError{400, 10102, fmt.Sprintf("consumer name is too long, maximum allowed is %d", maxNameLen)}
		}
		if strings.ContainsAny(n.name, ".*>\\/") {
			return c, errInvalidConfig(fmt.Sprintf("consumer %s can not contain '.', '*', '>', '\\', '/'", n.what))
		}
		if strings.ContainsAny(n.name, " \t\r\n@") {
			// Not a JetStream rule: the name is a token of the ack
			// subject, which ends at white space and at '@'.
			return c, errInvalidConfig(fmt.Sprintf("consumer %s can not contain white space or '@' on queen-bridge", n.what))
		}
	}
	if len(c.Description) > maxDescriptionLen {
		return c, &apiError{400, 10107, fmt.Sprintf("consumer description is too long, maximum allowed is %d", maxDescriptionLen)}
	}
	if r := checkFilters(&c, s); r != nil {
		return c, r
	}
	if r := checkStart(&c, j.OptStartTime != nil); r != nil {
		return c, r
	}
	if c.AckWait < 0 {
		return c, errAckWaitNegative
	}
	for _, b := range c.BackOff {
		if b <= 0 {
			return c, errBackOffNegative
		}
	}
	setDefaults(&c)
	if c.MaxDeliver != -1 && len(c.BackOff) > 0 && c.MaxDeliver <= len(c.BackOff) {
		return c, errMaxDeliverBackoff
	}
	return c, nil
}

// unsupportedConfig refuses what a pull consumer on the bridge cannot do:
// push delivery, flow control, rate limits, sampling, replay at the
// original pace, priority groups, pausing, replicas.
func unsupportedConfig(j *consumerConfigJSON, now time.Time) *apiError {
	switch {
	case j.DeliverSubject != "" || j.DeliverGroup != "":
		return errNotSupported("a push consumer (deliver_subject, deliver_group)")
	case j.AckPolicy == "flow_control":
		return errAckFCNeedsPush
	case j.FlowControl:
		return errFlowControlNeedPush
	case j.Heartbeat != 0:
		return errHeartbeatNeedsPush
	case j.RateLimit != 0:
		return errPullRateLimit
	case j.SampleFrequency != "":
		return errNotSupported("sampling (sample_freq)")
	case j.ReplayPolicy == "original":
		return errNotSupported("replay_policy original")
	case j.ReplayPolicy != "" && j.ReplayPolicy != "instant":
		return errReplayPolicyInvalid
	case len(j.PriorityGroups) > 0 || (j.PriorityPolicy != "" && j.PriorityPolicy != "none") || j.PinnedTTL != 0:
		return errNotSupported("priority groups (priority_groups, priority_policy, priority_timeout)")
	case j.Direct || j.Sourcing:
		return errNotSupported("a direct or sourcing consumer")
	case j.PauseUntil != nil && j.PauseUntil.After(now):
		return errNotSupported("pausing a consumer (pause_until)")
	case j.Replicas > 1:
		return errReplicasNotSupp
	}
	return nil
}

// checkFilters checks the filter subjects as nats-server does: one form
// or the other, none empty or malformed, no two overlapping, each within
// the stream's subjects.
func checkFilters(c *ConsumerConfig, s *Stream) *apiError {
	if c.FilterSubject != "" && len(c.FilterSubjects) > 0 {
		return errDuplicateFilters
	}
	filters := c.FilterSubjects
	if c.FilterSubject != "" {
		filters = []string{c.FilterSubject}
	}
	parsed := make([][]string, len(filters))
	for i, f := range filters {
		if f == "" {
			return errEmptyFilter
		}
		t, err := parseFilter(f)
		if err != nil {
			return errInvalidConfig("invalid subject: " + err.Error())
		}
		parsed[i] = t
		within := false
		for _, sf := range s.Filters {
			st, _ := parseFilter(sf) // checked at start
			within = within || overlaps(t, st)
		}
		if !within {
			return errFilterNotSubset
		}
		for _, o := range parsed[:i] {
			if overlaps(t, o) {
				return errOverlappingFilters
			}
		}
	}
	return nil
}

// checkStart refuses a start position that conflicts with the deliver
// policy, in nats-server's words.
func checkStart(c *ConsumerConfig, hasTime bool) *apiError {
	badStart := func(dp, start string) *apiError {
		return errInvalidPolicy(fmt.Sprintf("consumer delivery policy is deliver %s, but optional start %s is also set", dp, start))
	}
	notSet := func(dp, what string) *apiError {
		return errInvalidPolicy(fmt.Sprintf("consumer delivery policy is deliver %s, but optional %s is not set", dp, what))
	}
	name := map[DeliverPolicy]string{DeliverAll: "all", DeliverLast: "last", DeliverLastPerSubject: "last per subject", DeliverNew: "new"}[c.DeliverPolicy]
	switch c.DeliverPolicy {
	case DeliverAll, DeliverLast, DeliverLastPerSubject, DeliverNew:
		if c.OptStartSeq > 0 {
			return badStart(name, "sequence")
		}
		if hasTime {
			return badStart(name, "time")
		}
		if c.DeliverPolicy == DeliverLastPerSubject && c.FilterSubject == "" && len(c.FilterSubjects) == 0 {
			return notSet(name, "filter subject")
		}
	case DeliverByStartSequence:
		if c.OptStartSeq == 0 {
			return notSet("by start sequence", "start sequence")
		}
		if hasTime {
			return badStart("by start sequence", "time")
		}
	case DeliverByStartTime:
		if !hasTime {
			return notSet("by start time", "start time")
		}
		if c.OptStartSeq != 0 {
			return badStart("by start time", "start sequence")
		}
	}
	return nil
}

// setDefaults fills in what nats-server fills in for a pull consumer.
func setDefaults(c *ConsumerConfig) {
	if c.MaxDeliver == 0 || c.MaxDeliver < -1 {
		c.MaxDeliver = -1
	}
	if c.MaxWaiting <= 0 {
		c.MaxWaiting = defaultMaxWaiting
	}
	if c.MaxAckPending < -1 {
		c.MaxAckPending = -1
	}
	if c.MaxAckPending == 0 && c.AckPolicy != AckNone {
		c.MaxAckPending = defaultMaxAckPending
	}
	c.MaxRequestBatch = max(c.MaxRequestBatch, 0)
	c.MaxRequestExpires = max(c.MaxRequestExpires, 0)
	c.MaxRequestMaxBytes = max(c.MaxRequestMaxBytes, 0)
	c.InactiveThreshold = max(c.InactiveThreshold, 0)
	if c.AckWait == 0 && c.AckPolicy != AckNone {
		c.AckWait = defaultAckWait
	}
	if len(c.BackOff) > 0 {
		c.AckWait = c.BackOff[0]
	}
	if c.Durable == "" && c.InactiveThreshold == 0 {
		c.InactiveThreshold = defaultInactiveEphemeral
	}
}

// consumerConfigJSON renders the engine's configuration.
func configJSON(c ConsumerConfig) *consumerConfigJSON {
	j := &consumerConfigJSON{
		Durable: c.Durable, Name: c.Name, Description: c.Description,
		DeliverPolicy: deliverPolicyNames[c.DeliverPolicy], OptStartSeq: c.OptStartSeq,
		AckPolicy: ackPolicyNames[c.AckPolicy], AckWait: c.AckWait, MaxDeliver: c.MaxDeliver,
		BackOff: c.BackOff, FilterSubject: c.FilterSubject, FilterSubjects: c.FilterSubjects,
		ReplayPolicy: "instant", MaxWaiting: c.MaxWaiting, MaxAckPending: c.MaxAckPending,
		HeadersOnly: c.HeadersOnly, MaxRequestBatch: c.MaxRequestBatch,
		MaxExpires: c.MaxRequestExpires, MaxBytes: c.MaxRequestMaxBytes,
		Inactive: c.InactiveThreshold, Replicas: c.Replicas, MemoryStorage: c.MemoryStorage,
		Metadata: c.Metadata,
	}
	if !c.OptStartTime.IsZero() {
		t := c.OptStartTime
		j.OptStartTime = &t
	}
	return j
}

// consumerInfoJSON renders a consumer's definition and state.
func infoJSON(ci ConsumerInfo) *consumerInfoJSON {
	seq := func(s SequenceInfo) sequenceInfoJSON {
		out := sequenceInfoJSON{Consumer: s.Consumer, Stream: s.Stream}
		if !s.Last.IsZero() {
			t := s.Last.UTC()
			out.Last = &t
		}
		return out
	}
	return &consumerInfoJSON{
		Stream: ci.Stream, Name: ci.Name, Created: ci.Created.UTC(), Config: configJSON(ci.Config),
		Delivered: seq(ci.Delivered), AckFloor: seq(ci.AckFloor),
		NumAckPending: ci.NumAckPending, NumRedelivered: ci.NumRedelivered,
		NumWaiting: ci.NumWaiting, NumPending: ci.NumPending, TS: ci.TimeStamp.UTC(),
	}
}
