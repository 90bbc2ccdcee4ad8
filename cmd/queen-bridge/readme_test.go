package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/queenbridge/queenbridge/internal/testenv"
)

// readmeShell is the README's shell examples that talk to the bridge's
// HTTP address, in order: push, consume, transaction, admin.
func readmeShell(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		if strings.Contains(m[1], "localhost:6632") {
			out = append(out, m[1])
		}
	}
	return out
}

// The README's examples paste and run, in order, against a fresh bridge:
// the ids an acknowledgement and a transaction need come from the pop's
// answer, not from the page. Run by bash with curl and jq, as a reader
// would; the address is the test bridge's instead of localhost:6632.
func TestReadmeExamplesRun(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README's examples need %s: apt-get install -y %s (.ci/run installs it)", tool, tool)
		}
	}
	blocks := readmeShell(t)
	if len(blocks) != 4 {
		t.Fatalf("%d shell examples on localhost:6632 in the README, want 4 (push, consume, transaction, admin)", len(blocks))
	}
	r := startBinary(t, binary(t), "QUEEN_PG_DSN="+testenv.NewDatabase(t), "QUEEN_DATA_DIR="+t.TempDir())
	defer r.interrupt(t)
	want := [][]string{
		{`"status":"queued"`, `"transactionId":"order-1001"`},
		{`"transactionId":"order-1001","success":true`, `"leaseReleased":true`},
		{`"type":"ack","success":true,"transactionId":"order-1002"`, `"queueName":"invoices"`},
		{`"payload":{"total":12.5}`, `"Message deleted successfully"`, `"existed":true`},
	}
	for i, block := range blocks {
		script := strings.ReplaceAll(block, "localhost:6632", r.http)
		out, err := exec.Command("bash", "-euo", "pipefail", "-c", script).CombinedOutput()
		if err != nil {
			t.Fatalf("example %d failed (%v):\n%s\n%s", i+1, err, block, out)
		}
		for _, w := range want[i] {
			if !strings.Contains(string(out), w) {
				t.Fatalf("example %d does not answer %s:\n%s\n%s", i+1, w, block, out)
			}
		}
	}
}
