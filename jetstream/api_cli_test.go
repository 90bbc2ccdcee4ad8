package jetstream

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// The nats CLI itself, schema checks on, against the API: what an
// operator types to look at streams and to add, read, list and remove
// pull consumers.
func TestNatsCLIManagesPullConsumers(t *testing.T) {
	cli := testkit.NATSCLI(t)
	h := newHarness(t, nil)
	run := func(args ...string) (string, error) {
		base := []string{"--server", testenv.NATSURL(t), "--timeout", "30s", "--js-domain", h.api.cfg.Domain}
		cmd := exec.Command(cli, append(base, args...)...)
		cmd.Env = append(cmd.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := run(args...)
		if err != nil {
			t.Fatalf("nats %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}

	if out := must("stream", "info", "ORDERS"); !strings.Contains(out, "orders.>") {
		t.Errorf("stream info:\n%s", out)
	}
	if out := must("stream", "ls", "--names"); !strings.Contains(out, "ORDERS") || !strings.Contains(out, "AUDIT") {
		t.Errorf("stream ls:\n%s", out)
	}
	must("consumer", "add", "ORDERS", "workers", "--pull", "--defaults", "--filter", "orders.eu.>")
	var info consumerInfoJSON
	if err := json.Unmarshal([]byte(must("consumer", "info", "ORDERS", "workers", "--json")), &info); err != nil ||
		info.Name != "workers" || info.Config.FilterSubject != "orders.eu.>" || info.Config.AckPolicy != "explicit" {
		t.Errorf("consumer info: %+v, %v", info, err)
	}
	if out := must("consumer", "ls", "ORDERS", "--names"); strings.TrimSpace(out) != "workers" {
		t.Errorf("consumer ls:\n%s", out)
	}
	if out, err := run("consumer", "add", "ORDERS", "push", "--target", "out.here", "--defaults"); err == nil || !strings.Contains(out, "push consumer") {
		t.Errorf("a push consumer was not refused: %v\n%s", err, out)
	}
	must("consumer", "rm", "ORDERS", "workers", "--force")
	if out := must("consumer", "ls", "ORDERS", "--names"); strings.Contains(out, "workers") {
		t.Errorf("consumer ls after rm:\n%s", out)
	}
}
