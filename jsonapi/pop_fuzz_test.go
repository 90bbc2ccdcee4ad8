package jsonapi

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// popParams are the query parameters of a pop, in FuzzParsePopQuery's
// argument order.
var popParams = []string{"batch", "timeout", "partitions", "wait", "autoAck", "consumerGroup", "subscriptionMode", "subscriptionFrom"}

// FuzzParsePopQuery takes any values of a pop's query parameters (and any
// queue and partition from the path) through ParsePopQuery and Validate, as
// the front door does: neither panics, a refusal is a BadRequest naming a
// parameter, and a pop let through is within every bound. The same pop as
// <prefix>.v1.pop's body reads the same.
func FuzzParsePopQuery(f *testing.F) {
	f.Add("q", "", "", "", "", "", "", "", "", "")
	f.Add("orders.eu", "customer-42", "10000", "300000", "100", "true", "1", "billing", "new", "2026-11-30T12:00:00.5+02:00")
	f.Add("q", "", "0", "0", "0", "false", "0", "", "all", "now")
	f.Add("q", "p", "10001", "-1", "101", "yes", "maybe", "g\x00", "from_beginning", "yesterday")
	f.Add("", "", "2147483648", "1e3", " 1", "T", "F", strings.Repeat("g", 256), "NEW", "2026-11-30")
	f.Fuzz(func(t *testing.T, queue, partition, batch, timeout, partitions, wait, autoAck, group, mode, from string) {
		values := map[string]string{"batch": batch, "timeout": timeout, "partitions": partitions, "wait": wait, "autoAck": autoAck,
			"consumerGroup": group, "subscriptionMode": mode, "subscriptionFrom": from}
		r, err := ParsePopQuery(func(k string) string { return values[k] })
		if err != nil {
			namesParam(t, err)
			return
		}
		// What a query says, the NATS body says as fields (JSON text is
		// UTF-8: a query that is not has no such body).
		if utf8.ValidString(group) && utf8.ValidString(mode) && utf8.ValidString(from) { // each alone: two halves can make one rune
			body, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			viaNATS, err := DecodePop(body)
			if err != nil || viaNATS != r {
				t.Fatalf("%s reads back as %+v (%v), not %+v", body, viaNATS, err, r)
			}
		}
		r.Queue, r.Partition = queue, partition
		if err := r.Validate(); err != nil {
			namesParam(t, err)
			return
		}
		switch {
		case CheckName("queue", r.Queue, true) != nil:
			t.Fatalf("queue %q let through", r.Queue)
		case r.Partition != "" && CheckName("partition", r.Partition, true) != nil:
			t.Fatalf("partition %q let through", r.Partition)
		case CheckName("consumerGroup", r.ConsumerGroup, true) != nil:
			t.Fatalf("consumerGroup %q let through", r.ConsumerGroup)
		case group == "" && r.ConsumerGroup != QueueModeGroup:
			t.Fatalf("no group is %q", r.ConsumerGroup)
		case r.Batch < 1 || r.Batch > MaxPopBatch:
			t.Fatalf("batch %d let through", r.Batch)
		case r.Partitions < 1 || r.Partitions > MaxPopPartitions:
			t.Fatalf("partitions %d let through", r.Partitions)
		case r.TimeoutMs < 1 || r.TimeoutMs > 300000:
			t.Fatalf("timeout %d let through", r.TimeoutMs)
		case r.SubscriptionMode != "all" && r.SubscriptionMode != "new" && r.SubscriptionMode != "":
			t.Fatalf("subscriptionMode %q let through", r.SubscriptionMode)
		case mode == "" && from != "now" && r.SubscriptionMode != "":
			t.Fatalf("no subscriptionMode is %q, not the consumer's default", r.SubscriptionMode)
		case (mode == "new" || mode == "new-only" || from == "now") != (r.SubscriptionMode == "new"):
			t.Fatalf("subscriptionMode %q, subscriptionFrom %q is mode %q", mode, from, r.SubscriptionMode)
		case from == "now" && r.SubscriptionMode != "new":
			t.Fatalf("subscriptionFrom now is mode %q", r.SubscriptionMode)
		case (from == "" || from == "now") != r.From.IsZero():
			t.Fatalf("subscriptionFrom %q is %v", from, r.From)
		}
	})
}

// namesParam checks a refusal: a BadRequest whose text starts with the name
// of what was wrong.
func namesParam(t *testing.T, err error) {
	t.Helper()
	var bad *BadRequest
	if !errors.As(err, &bad) {
		t.Fatalf("error of the wrong kind: %v", err)
	}
	for _, p := range append([]string{"queue", "partition"}, popParams...) {
		if strings.HasPrefix(err.Error(), p+" ") {
			return
		}
	}
	t.Fatalf("error %q names no parameter", err)
}
