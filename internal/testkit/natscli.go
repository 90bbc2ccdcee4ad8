package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// NATSCLIVersion is the nats CLI (github.com/nats-io/natscli) the tests
// run: `nats pub --jetstream` as operators and scripts use it.
const NATSCLIVersion = "v0.5.0"

// NATSCLI builds the nats CLI at NATSCLIVersion into the test's temporary
// directory and returns its path. It builds through the Go module proxy,
// outside this module (go install pkg@version), so the project's go.mod
// does not carry the CLI's dependencies; the build cache makes it quick
// after the first time. A build that fails fails the test: it never skips.
func NATSCLI(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "install", "github.com/nats-io/natscli/nats@"+NATSCLIVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-buildvcs=false", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the nats CLI %s: %v\n%s", NATSCLIVersion, err, out)
	}
	return filepath.Join(dir, "nats")
}
