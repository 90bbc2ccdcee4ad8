package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/embedded"
	"github.com/queenbridge/queenbridge/internal/testenv"
)

// passwordNATS runs a NATS server that wants a user and password (and its
// leafnode listener another).
func passwordNATS(t *testing.T, user, password string) (string, *embedded.NATS) {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("authorization { user: %q, password: %q }\n", user, password)), 0o600); err != nil {
		t.Fatal(err)
	}
	ns, err := embedded.StartNATS(embedded.NATSConfig{Listen: "127.0.0.1:-1", ConfigFile: conf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Stop)
	return strings.TrimPrefix(ns.ClientURL(), "nats://"), ns
}

// Configured secrets (a NATS password, the leafnode passwords, tenant and
// admin tokens, the encryption key) appear nowhere in the log of a whole run, in -h, or in
// the errors of settings that are wrong.
func TestSecretsNeverPrinted(t *testing.T) {
	const (
		natsPassword = "nats-pw-7781"
		tenantToken  = "tok-tenant-5512"
		adminToken   = "tok-admin-9034"
		keyHex       = "6b65792d3439313066616b656b65796b65792d3439313066616b656b65796b65"
		leafAcctPW   = "leaf-acct-pw-2209"
	)
	hostPort, ns := passwordNATS(t, "queen", natsPassword)
	secrets := []string{natsPassword, ns.LeafPassword(), tenantToken, adminToken, keyHex, leafAcctPW}
	check := func(what, out string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s shows a secret (%s...):\n%s", what, s[:4], out)
			}
		}
	}
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(keyHex+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tenant := uuid.New().String()
	env := []string{
		"QUEEN_NATS_URL=nats://queen:" + natsPassword + "@" + hostPort,
		"QUEEN_NATS_LEAF_URL=" + ns.LeafURL(), "QUEEN_NATS_LEAF_USER=" + embedded.LeafUser, "QUEEN_NATS_LEAF_PASSWORD=" + ns.LeafPassword(),
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
	if !strings.Contains(r.Logs(), "nats://queen:xxxxx@") {
		t.Errorf("the ready line should show the NATS URL with its password redacted:\n%s", r.Logs())
	}
	check("the log of a run", r.Logs())

	help := exec.Command(bin, "-h")
	help.Env = append(os.Environ(), env...)
	out, _ := help.CombinedOutput()
	check("-h", string(out))

	for _, bad := range [][]string{
		{"QUEEN_NATS_URL=nats://queen:" + natsPassword + "x@" + hostPort},        // refused by the server
		{"QUEEN_NATS_LEAF_URL=leaf://queen:" + ns.LeafPassword() + "@127.0.0.1"}, // no port
		{"QUEEN_HTTP_TOKENS=" + tenantToken},                                     // no tenant
		{"QUEEN_HTTP_ADMIN_TOKENS=" + adminToken + "=not-a-uuid"},
		{"QUEEN_ENCRYPTION_KEY_FILE=", "QUEEN_ENCRYPTION_KEY=" + keyHex[:40]}, // too short
		// the accounts mode's leaf users: one without its password's colon,
		// one for an account that is not mapped
		{"QUEEN_NATS_ACCOUNTS=TENANT_A=" + tenant, "QUEEN_NATS_LEAF_USER=", "QUEEN_NATS_LEAF_PASSWORD=", "QUEEN_NATS_LEAF_ACCOUNTS=TENANT_A=leaf-a" + leafAcctPW},
		{"QUEEN_NATS_ACCOUNTS=TENANT_A=" + tenant, "QUEEN_NATS_LEAF_USER=", "QUEEN_NATS_LEAF_PASSWORD=", "QUEEN_NATS_LEAF_ACCOUNTS=TENANT_A=leaf-a:" + leafAcctPW + ",TENANT_C=leaf-c:" + leafAcctPW},
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

func TestEncryptionKeysParse(t *testing.T) {
	k := func(b byte) string { return strings.Repeat(string("0123456789abcdef"[b]), 64) }
	good := []struct {
		value string
		ids   []uint8
	}{
		{k(1), []uint8{0}},
		{"1:" + k(1) + ", 2:" + k(2), []uint8{1, 2}},
		{"0:" + k(1) + ",255:" + k(2), []uint8{0, 255}},
		{"", nil},
	}
	for _, g := range good {
		keys, err := (&config{encryptionKeyHex: g.value}).encryptionKeys()
		if err != nil || len(keys) != len(g.ids) {
			t.Fatalf("%q: %v, %d keys", g.value, err, len(keys))
		}
		for _, id := range g.ids {
			if len(keys[id]) != 32 {
				t.Fatalf("%q: no 32-byte key %d", g.value, id)
			}
		}
	}
	for _, bad := range []string{"1:" + k(3)[:62], "256:" + k(3), "x:" + k(3), "1:" + k(3) + ",1:" + k(4), k(3) + "zz"} {
		_, err := (&config{encryptionKeyHex: bad}).encryptionKeys()
		if err == nil || strings.Contains(err.Error(), k(3)[:16]) {
			t.Errorf("%.12q...: error %v", bad, err)
		}
	}
	file := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(file, []byte("1:"+k(1)+"\n2:"+k(2)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if keys, err := (&config{encryptionKeyFile: file}).encryptionKeys(); err != nil || len(keys[1]) != 32 || len(keys[2]) != 32 {
		t.Fatalf("from a file: %v", err)
	}
}
