package bridge

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/embedded"
	"github.com/queenbridge/queenbridge/internal/leaf"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// In the accounts mode every tenant account needs one leaf login, for
// that account's tenant; outside it there are none.
func TestLeafLoginsAreCheckedAgainstTheAccounts(t *testing.T) {
	tA, tB := tenancy.TenantID(uuid.New()), tenancy.TenantID(uuid.New())
	accounts := map[string]tenancy.TenantID{"TENANT_A": tA, "TENANT_B": tB}
	la := leaf.Login{Tenant: tA, Account: "TENANT_A", User: "la", Password: "pa"}
	lb := leaf.Login{Tenant: tB, Account: "TENANT_B", User: "lb", Password: "pb"}
	const url = "nats-leaf://127.0.0.1:7422"
	if err := (&Config{NATSAccounts: accounts, LeafURL: url, LeafLogins: []leaf.Login{la, lb}}).checkLeafLogins(); err != nil {
		t.Fatal(err)
	}
	if err := (&Config{NATSAccounts: accounts}).checkLeafLogins(); err != nil {
		t.Fatalf("no leafnode listener, no logins: %v", err)
	}
	wrong := lb
	wrong.Tenant = tA
	for _, bad := range []struct {
		cfg  Config
		says string
	}{
		{Config{NATSAccounts: accounts, LeafURL: url, LeafLogins: []leaf.Login{la}}, `account "TENANT_B" has no leaf login`},
		{Config{NATSAccounts: accounts, LeafURL: url, LeafLogins: []leaf.Login{la, wrong}}, `"TENANT_B" is for tenant ` + tA.String()},
		{Config{NATSAccounts: accounts, LeafURL: url, LeafLogins: []leaf.Login{la, lb, la}}, `"TENANT_A" has two leaf logins`},
		{Config{NATSAccounts: accounts, LeafURL: url, LeafLogins: []leaf.Login{la, lb, {Account: "C"}}}, `"C": the account is not mapped`},
		{Config{LeafURL: url, LeafLogins: []leaf.Login{la}}, "for the accounts mode"},
	} {
		if err := bad.cfg.checkLeafLogins(); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("%+v: %v, want %q", bad.cfg.LeafLogins, err, bad.says)
		}
	}
}

// The bridge's leaf connections: in the accounts mode one per tenant, in
// the tenant's account (the embedded server's users bound to the example
// accounts); in the single-account mode the default tenant's, over
// LeafUser.
func TestDialLeavesOnePerTenantAccount(t *testing.T) {
	t.Setenv("QUEEN_NATS_BRIDGE_PASSWORD", "bridge-pw")
	t.Setenv("QUEEN_NATS_TENANT_A_PASSWORD", "a-pw")
	t.Setenv("QUEEN_NATS_TENANT_B_PASSWORD", "b-pw")
	ns, err := embedded.StartNATS(embedded.NATSConfig{Listen: "127.0.0.1:-1", ConfigFile: "../deploy/nats/accounts.conf", LeafAccounts: []string{"TENANT_A", "TENANT_B"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Stop()
	tA, tB := tenancy.TenantID(uuid.New()), tenancy.TenantID(uuid.New())
	accounts := map[string]tenancy.TenantID{"TENANT_A": tA, "TENANT_B": tB}
	cfg := &Config{NATSAccounts: accounts, LeafURL: ns.LeafURL()}
	for _, l := range ns.LeafLogins() {
		cfg.LeafLogins = append(cfg.LeafLogins, leaf.Login{Tenant: accounts[l.Account], Account: l.Account, User: l.User, Password: l.Password})
	}
	if err := cfg.checkLeafLogins(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	set, err := dialLeaves(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	a, okA := set.For(tA)
	b, okB := set.For(tB)
	if _, okDefault := set.For(tenancy.TenantID{}); !okA || !okB || okDefault || set.Len() != 2 {
		t.Fatalf("connections for A %v, B %v, the default tenant %v; %d in all", okA, okB, okDefault, set.Len())
	}
	nc, err := nats.Connect(ns.ClientURL(), nats.UserInfo("tenant-a", "a-pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("_INBOX.tenant-a")
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "tenant A's leaf to hear of its inbox", 30*time.Second, func() bool { return a.Interested("_INBOX.tenant-a") })
	if b.Interested("_INBOX.tenant-a") {
		t.Fatal("tenant B's leaf sees tenant A's inbox")
	}
	if err := a.Publish("_INBOX.tenant-a", "$JS.ACK._.1.ORDERS.c.1.7.3.123.0.1@orders.eu", nil, []byte("m")); err != nil {
		t.Fatal(err)
	}
	if m, err := sub.NextMsg(30 * time.Second); err != nil || m.Subject != "orders.eu" || m.Reply != "$JS.ACK._.1.ORDERS.c.1.7.3.123.0.1" {
		t.Fatalf("tenant A's delivery: %v %v", m, err)
	}

	single, err := dialLeaves(ctx, &Config{LeafURL: ns.LeafURL(), LeafUser: embedded.LeafUser, LeafPassword: ns.LeafPassword()})
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	if _, ok := single.For(tenancy.TenantID{}); !ok || single.Len() != 1 {
		t.Fatalf("single-account mode: %d connections, the default tenant's %v", single.Len(), ok)
	}
	if none, err := dialLeaves(ctx, &Config{}); none != nil || err != nil {
		t.Fatalf("no leafnode listener: %v, %v", none, err)
	}
}
