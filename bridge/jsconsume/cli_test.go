package jsconsume_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testkit"
)

// The nats CLI (testkit.NATSCLIVersion, schema validation on: NOVALIDATE
// is never set) lists and describes the stream, adds a durable pull
// consumer with its defaults, describes it, takes two messages with
// `consumer next` (acknowledging them), lists it and removes it: against a
// real JetStream stream and the bridge, with the same outcomes.
func TestNatsCLIConsumes(t *testing.T) {
	cli := testkit.NATSCLI(t)
	bin := bridgeBinary(t)
	for _, tg := range []*consumeTarget{realJetStreamOrders(t), bridgeOrders(t, bin)} {
		t.Run(tg.name, func(t *testing.T) {
			c := newConsumeCase(t, tg)
			for _, id := range []string{"q1", "q2", "q3"} {
				c.publish(t, c.subject("a"), id)
			}
			nats := func(args ...string) (string, error) {
				ctx, cancel := context.WithTimeout(c.ctx, time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, cli, append([]string{"--server", c.url, "--timeout", "20s"}, args...)...)
				// Validation of every answer against the JetStream schemas
				// stays on, whatever the test's environment says.
				env := slices.DeleteFunc(cmd.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "NOVALIDATE=") })
				cmd.Env = append(env, "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
				out, err := cmd.CombinedOutput()
				return string(out), err
			}
			must := func(args ...string) string {
				t.Helper()
				out, err := nats(args...)
				if err != nil {
					t.Fatalf("nats %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return out
			}
			mustJSON := func(v any, args ...string) {
				t.Helper()
				out := must(args...)
				if err := json.Unmarshal([]byte(out), v); err != nil {
					t.Fatalf("nats %s: %v\n%s", strings.Join(args, " "), err, out)
				}
			}

			if out := must("stream", "ls", "--names"); !slices.Contains(strings.Fields(out), ordersStream) {
				t.Fatalf("stream ls lacks %s:\n%s", ordersStream, out)
			}
			if out := must("stream", "ls"); !strings.Contains(out, ordersStream) {
				t.Fatalf("stream ls lacks %s:\n%s", ordersStream, out)
			}
			var si struct {
				Config struct {
					Name     string
					Subjects []string
				}
				State struct{ Messages uint64 }
			}
			mustJSON(&si, "stream", "info", ordersStream, "--json")
			if si.Config.Name != ordersStream || !slices.Equal(si.Config.Subjects, []string{ordersFilter}) || si.State.Messages != 3 {
				t.Fatalf("stream info: %+v", si)
			}
			if out := must("stream", "info", ordersStream); !strings.Contains(out, "Subjects: "+ordersFilter) {
				t.Fatalf("stream info:\n%s", out)
			}

			name := c.name("cli")
			if out := must("consumer", "add", ordersStream, name, "--pull", "--defaults", "--filter", c.all()); !strings.Contains(out, name) {
				t.Fatalf("consumer add:\n%s", out)
			}
			type consumerInfo struct {
				Name   string
				Config struct {
					DurableName   string `json:"durable_name"`
					AckPolicy     string `json:"ack_policy"`
					DeliverPolicy string `json:"deliver_policy"`
					FilterSubject string `json:"filter_subject"`
				}
				NumPending    uint64 `json:"num_pending"`
				NumAckPending uint64 `json:"num_ack_pending"`
			}
			var ci consumerInfo
			mustJSON(&ci, "consumer", "info", ordersStream, name, "--json")
			if ci.Name != name || ci.Config.DurableName != name || ci.Config.AckPolicy != "explicit" || ci.Config.DeliverPolicy != "all" ||
				ci.Config.FilterSubject != c.all() || ci.NumPending != 3 || ci.NumAckPending != 0 {
				t.Fatalf("consumer info: %+v", ci)
			}
			if out := must("consumer", "info", ordersStream, name); !strings.Contains(out, "Pull Mode: true") {
				t.Fatalf("consumer info:\n%s", out)
			}

			out := must("consumer", "next", ordersStream, name, "--count", "2")
			if !strings.Contains(out, `{"id":"q1"}`) || !strings.Contains(out, `{"id":"q2"}`) || strings.Contains(out, `"q3"`) ||
				strings.Index(out, `"q1"`) > strings.Index(out, `"q2"`) || strings.Count(out, "subj: "+c.subject("a")+" / tries: 1 /") != 2 ||
				strings.Count(out, "Acknowledged message") != 2 {
				t.Fatalf("consumer next --count 2:\n%s", out)
			}
			// consumer next acknowledges what it shows (and says so); the
			// acknowledgements are applied when the info shows none pending.
			testkit.WaitFor(t, "the two acknowledgements", time.Minute, func() bool {
				mustJSON(&ci, "consumer", "info", ordersStream, name, "--json")
				return ci.NumAckPending == 0
			})
			if ci.NumPending != 1 {
				t.Fatalf("after two: %+v", ci)
			}

			if out := must("consumer", "ls", ordersStream, "--names"); !slices.Contains(strings.Fields(out), name) {
				t.Fatalf("consumer ls lacks %s:\n%s", name, out)
			}
			if out := must("consumer", "ls", ordersStream); !strings.Contains(out, name) {
				t.Fatalf("consumer ls lacks %s:\n%s", name, out)
			}
			must("consumer", "rm", ordersStream, name, "-f")
			if out := must("consumer", "ls", ordersStream, "--names"); slices.Contains(strings.Fields(out), name) {
				t.Fatalf("consumer ls after rm lists %s:\n%s", name, out)
			}
			// The CLI, not finding the name, falls back to a picker it
			// cannot show without a terminal.
			if out, err := nats("consumer", "info", ordersStream, name); err == nil || strings.Contains(out, "Information for Consumer") {
				t.Fatalf("consumer info after rm: %v\n%s", err, out)
			}
		})
	}
}
