package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/queenbridge/queenbridge/internal/testenv"
)

// passwordNATS runs a NATS server that wants a user and password.
func passwordNATS(t *testing.T, user, password string) string {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, Username: user, Password: password, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(s.Shutdown)
	return strings.TrimPrefix(s.ClientURL(), "nats://")
}

// Configured secrets (a NATS password, tenant and admin tokens, the
// encryption key) appear nowhere in the log of a whole run, in -h, or in
// the errors of settings that are wrong.
func TestSecretsNeverPrinted(t *testing.T) {
	const (
		natsPassword = "nats-pw-7781"
		tenantToken  = "tok-tenant-5512"
		adminToken   = "tok-admin-9034"
		keyHex       = "6b65792d3439313066616b656b65796b65792d3439313066616b656b65796b65"
	)
	secrets := []string{natsPassword, tenantToken, adminToken, keyHex}
	check := func(what, out string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s shows a secret (%s...):\n%s", what, s[:4], out)
			}
		}
	}
	hostPort := passwordNATS(t, "queen", natsPassword)
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(keyHex+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tenant := uuid.New().String()
	env := []string{
		"QUEEN_NATS_URL=nats://queen:" + natsPassword + "@" + hostPort,
		"QUEEN_HTTP_TOKENS=" + tenantToken + "=" + tenant,
		"QUEEN_HTTP_ADMIN_TOKENS=" + adminToken + "=" + tenant,
		"QUEEN_ENCRYPTION_KEY_FILE=" + keyFile,
		"QUEEN_PG_DSN=" + testenv.NewDatabase(t),
		"QUEEN_DATA_DIR=" + t.TempDir(),
		"QUEEN_LOG_LEVEL=debug",
	}
	bin := binary(t)

	r := startBinary(t, bin, env...)
	req, _ := http.NewRequest(http.MethodPost, "http://"+r.http+"/api/v1/push", strings.NewReader(`{"items":[{"queue":"s","payload":1}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tenantToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("push with the tenant token: %d", resp.StatusCode)
	}
	r.interrupt(t)
	if !strings.Contains(r.logs.String(), "nats://queen:xxxxx@") {
		t.Errorf("the ready line should show the NATS URL with its password redacted:\n%s", r.logs)
	}
	check("the log of a run", r.logs.String())

	help := exec.Command(bin, "-h")
	help.Env = append(os.Environ(), env...)
	out, _ := help.CombinedOutput()
	check("-h", string(out))

	for _, bad := range [][]string{
		{"QUEEN_NATS_URL=nats://queen:" + natsPassword + "x@" + hostPort}, // refused by the server
		{"QUEEN_HTTP_TOKENS=" + tenantToken},                              // no tenant
		{"QUEEN_HTTP_ADMIN_TOKENS=" + adminToken + "=not-a-uuid"},
		{"QUEEN_ENCRYPTION_KEY_FILE=", "QUEEN_ENCRYPTION_KEY=" + keyHex[:40]}, // too short
	} {
		cmd := exec.Command(bin)
		cmd.Env = append(append(os.Environ(), env...), append(bad, "QUEEN_HTTP_ADDR="+freeAddr(t), "QUEEN_NATS_LISTEN="+freeAddr(t))...)
		done := make(chan []byte, 1)
		go func() { out, _ := cmd.CombinedOutput(); done <- out }()
		select {
		case out := <-done:
			if cmd.ProcessState.Success() {
				t.Errorf("%v: started, want a configuration error", bad)
			}
			check(strings.Join(bad, " "), string(out))
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			t.Fatalf("%v: still running after a minute", bad)
		}
	}
}
