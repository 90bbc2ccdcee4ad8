package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// The renamed settings still answer to their old names for a release (the
// QUEEN_V2_ ones are the first release's), the new name wins when both are set, and every
// use of an old name is noted for a warning.
func TestOldNamesStillWork(t *testing.T) {
	t.Setenv("QUEEN_V2_FUSION_SHARDS", "3")
	t.Setenv("QUEEN_V2_BUNDLE_MAX", "5")
	t.Setenv("QUEEN_BUNDLE_MAX", "11")
	t.Setenv("QUEEN_VEGAS_MAX", "4")
	c, err := load([]string{"-v2-fusion-hold-ms", "7"})
	if err != nil {
		t.Fatal(err)
	}
	if c.shards != 3 || c.bundleMax != 11 || c.inFlightMax != 4 || c.holdMS != 7 {
		t.Fatalf("shards %d (want 3, old name alone), bundle max %d (want 11, new name wins), in-flight max %d (want 4), hold %d ms (want 7, old flag)",
			c.shards, c.bundleMax, c.inFlightMax, c.holdMS)
	}
	warned := strings.Join(c.deprecated, "\n")
	for _, want := range []string{
		"QUEEN_V2_FUSION_SHARDS is deprecated: use QUEEN_FUSION_SHARDS",
		"QUEEN_V2_BUNDLE_MAX is deprecated and ignored: QUEEN_BUNDLE_MAX is set too",
		"QUEEN_VEGAS_MAX is deprecated: use QUEEN_BUNDLES_IN_FLIGHT_MAX",
		"-v2-fusion-hold-ms is deprecated: use -fusion-hold-ms",
	} {
		if !strings.Contains(warned, want) {
			t.Errorf("no warning %q in:\n%s", want, warned)
		}
	}

	t.Setenv("QUEEN_V2_FUSION_SHARDS", "many")
	if _, err := load(nil); err == nil || !strings.Contains(err.Error(), "QUEEN_V2_FUSION_SHARDS") {
		t.Fatalf("a bad value under the old name must name the old name: %v", err)
	}
	t.Setenv("QUEEN_FUSION_SHARDS", "2")
	if c, err := load(nil); err != nil || c.shards != 2 {
		t.Fatalf("the new name must win over a bad old one: %v", err)
	}
}

// The binary writes the warning as a log line: here it then stops at a bad
// encryption key, before it connects to anything.
func TestOldNameIsLoggedAsDeprecated(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binary(t))
	cmd.Env = append(os.Environ(), "QUEEN_V2_BUNDLE_MAX=9", "QUEEN_ENCRYPTION_KEY=not-a-key")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("started with a bad key:\n%s", out)
	}
	for _, want := range []string{`"level":"warn"`, `QUEEN_V2_BUNDLE_MAX is deprecated: use QUEEN_BUNDLE_MAX`} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("no %s in the output:\n%s", want, out)
		}
	}
}

// The leafnode settings name an external server's listener: with
// QUEEN_NATS_URL, a user and password only beside a URL, a URL that
// parses; an error never shows the password.
func TestLeafSettings(t *testing.T) {
	const secret = "leaf-pw-6623"
	for _, tc := range []struct {
		env  map[string]string
		want string // "" loads
	}{
		{map[string]string{}, ""},
		{map[string]string{"QUEEN_NATS_URL": "nats://127.0.0.1:4222", "QUEEN_NATS_LEAF_URL": "nats-leaf://127.0.0.1:7422",
			"QUEEN_NATS_LEAF_USER": "queen-leaf", "QUEEN_NATS_LEAF_PASSWORD": secret}, ""},
		{map[string]string{"QUEEN_NATS_URL": "nats://a:4222", "QUEEN_NATS_LEAF_URL": "nats-leaf://a:7422, nats-leaf://b:7422"}, ""},
		{map[string]string{"QUEEN_NATS_LEAF_URL": "nats-leaf://127.0.0.1:7422"}, "QUEEN_NATS_LEAF_URL is the leafnode listener of an external NATS"},
		{map[string]string{"QUEEN_NATS_URL": "nats://127.0.0.1:4222", "QUEEN_NATS_LEAF_PASSWORD": secret}, "QUEEN_NATS_LEAF_URL, which is not set"},
		{map[string]string{"QUEEN_NATS_URL": "nats://127.0.0.1:4222", "QUEEN_NATS_LEAF_URL": "nats-leaf://u:" + secret + "@127.0.0.1"}, "QUEEN_NATS_LEAF_URL: leaf: URL"},
		{map[string]string{"QUEEN_NATS_URL": "nats://127.0.0.1:4222", "QUEEN_NATS_LEAF_URL": "http://127.0.0.1:7422"}, "scheme"},
		{map[string]string{"QUEEN_NATS_URL": "nats://127.0.0.1:4222", "QUEEN_NATS_LEAF_URL": "nats-leaf://u:" + secret + "@127.0.0.1:7422/%zz"}, "invalid URL escape"},
	} {
		setLeafEnv(t, tc.env)
		c, err := load(nil)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.env, err)
		case tc.want == "" && (c.natsLeafURL != tc.env["QUEEN_NATS_LEAF_URL"] || c.natsLeafUser != tc.env["QUEEN_NATS_LEAF_USER"] || c.natsLeafPassword != tc.env["QUEEN_NATS_LEAF_PASSWORD"]):
			t.Errorf("%v: loaded %q %q", tc.env, c.natsLeafURL, c.natsLeafUser)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: %v, want an error saying %q", tc.env, err, tc.want)
		case err != nil && strings.Contains(err.Error(), secret):
			t.Errorf("the error shows the password: %v", err)
		}
	}
}

func setLeafEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for _, name := range []string{"QUEEN_NATS_URL", "QUEEN_NATS_LEAF_URL", "QUEEN_NATS_LEAF_USER", "QUEEN_NATS_LEAF_PASSWORD", "QUEEN_NATS_ACCOUNTS", "QUEEN_NATS_LEAF_ACCOUNTS"} {
		t.Setenv(name, env[name])
	}
}

// In the accounts mode an external NATS's leafnode listener takes one
// user per account (QUEEN_NATS_LEAF_ACCOUNTS), each account of
// QUEEN_NATS_ACCOUNTS with one, for its tenant; the one user of the
// single-account mode is refused there, and the per-account users outside
// it. No error shows a password.
func TestLeafAccountsSettings(t *testing.T) {
	const secret = "leaf-pw-4417"
	tA, tB := uuid.New().String(), uuid.New().String()
	accounts := "TENANT_A=" + tA + ",TENANT_B=" + tB
	ext := func(more map[string]string) map[string]string {
		env := map[string]string{"QUEEN_NATS_URL": "nats://127.0.0.1:4222", "QUEEN_NATS_LEAF_URL": "nats-leaf://127.0.0.1:7422", "QUEEN_NATS_ACCOUNTS": accounts}
		for k, v := range more {
			env[k] = v
		}
		return env
	}
	setLeafEnv(t, ext(map[string]string{"QUEEN_NATS_LEAF_ACCOUNTS": "TENANT_A=leaf-a:" + secret + ",TENANT_B=leaf-b:" + secret + "b"}))
	c, err := load(nil)
	if err != nil {
		t.Fatal(err)
	}
	tenants, err := parsePairs("QUEEN_NATS_ACCOUNTS", c.natsAccounts, "account")
	if err != nil {
		t.Fatal(err)
	}
	logins, err := c.leafLogins(tenants)
	if err != nil || len(logins) != 2 || logins[0].Account != "TENANT_A" || logins[0].Tenant.String() != tA || logins[0].User != "leaf-a" ||
		logins[0].Password != secret || logins[1].Tenant.String() != tB || logins[1].Password != secret+"b" {
		t.Fatalf("logins %d, %v", len(logins), err)
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{ext(map[string]string{"QUEEN_NATS_LEAF_ACCOUNTS": "TENANT_A=leaf-a:" + secret}), `account "TENANT_B" has no login`},
		{ext(nil), `QUEEN_NATS_LEAF_ACCOUNTS: account "TENANT_A" has no login`},
		{ext(map[string]string{"QUEEN_NATS_LEAF_ACCOUNTS": "TENANT_A=leaf-a" + secret + ",TENANT_B=leaf-b:" + secret}), "entry 1 is not ACCOUNT=user:password"},
		{ext(map[string]string{"QUEEN_NATS_LEAF_USER": "queen-leaf", "QUEEN_NATS_LEAF_PASSWORD": secret}), "give one per account in QUEEN_NATS_LEAF_ACCOUNTS"},
		{map[string]string{"QUEEN_NATS_URL": "nats://127.0.0.1:4222", "QUEEN_NATS_LEAF_URL": "nats-leaf://127.0.0.1:7422", "QUEEN_NATS_LEAF_ACCOUNTS": "TENANT_A=leaf-a:" + secret}, "QUEEN_NATS_LEAF_ACCOUNTS is for the accounts mode"},
		{map[string]string{"QUEEN_NATS_URL": "nats://127.0.0.1:4222", "QUEEN_NATS_ACCOUNTS": accounts, "QUEEN_NATS_LEAF_ACCOUNTS": "TENANT_A=leaf-a:" + secret}, "QUEEN_NATS_LEAF_URL, which is not set"},
		{map[string]string{"QUEEN_NATS_ACCOUNTS": accounts, "QUEEN_NATS_LEAF_ACCOUNTS": "TENANT_A=leaf-a:" + secret}, "QUEEN_NATS_LEAF_URL, which is not set"},
	} {
		setLeafEnv(t, tc.env)
		_, err := load(nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error saying %q", tc.env["QUEEN_NATS_LEAF_ACCOUNTS"] != "", err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}
