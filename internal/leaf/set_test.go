package leaf_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/embedded"
	"github.com/queenbridge/queenbridge/internal/leaf"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// twoAccounts is an embedded nats-server with accounts A and B (a client
// user in each) whose leafnode listener has a user bound to each, and
// the tenants the accounts map to.
type twoAccounts struct {
	ns     *embedded.NATS
	tA, tB tenancy.TenantID
}

const twoAccountsConf = `accounts {
  A { users [ { user: a, password: pa } ] }
  B { users [ { user: b, password: pb } ] }
}
`

func startTwoAccounts(t *testing.T) *twoAccounts {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "accounts.conf")
	if err := os.WriteFile(conf, []byte(twoAccountsConf), 0o600); err != nil {
		t.Fatal(err)
	}
	ns, err := embedded.StartNATS(embedded.NATSConfig{Listen: "127.0.0.1:-1", ConfigFile: conf, LeafAccounts: []string{"A", "B"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Stop)
	return &twoAccounts{ns: ns, tA: tenancy.TenantID(uuid.New()), tB: tenancy.TenantID(uuid.New())}
}

func (h *twoAccounts) logins() []leaf.Login {
	tenants := map[string]tenancy.TenantID{"A": h.tA, "B": h.tB}
	var out []leaf.Login
	for _, l := range h.ns.LeafLogins() {
		out = append(out, leaf.Login{Tenant: tenants[l.Account], Account: l.Account, User: l.User, Password: l.Password})
	}
	return out
}

func (h *twoAccounts) dialSet(t *testing.T, logins []leaf.Login) *leaf.Set {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := leaf.DialSet(ctx, leaf.Config{URL: h.ns.LeafURL(), Name: "set-test"}, logins)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func (h *twoAccounts) client(t *testing.T, user, password string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(h.ns.ClientURL(), nats.UserInfo(user, password))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func mustFor(t *testing.T, s *leaf.Set, tenant tenancy.TenantID) *leaf.Conn {
	t.Helper()
	c, ok := s.For(tenant)
	if !ok {
		t.Fatalf("no connection for tenant %s", tenant)
	}
	return c
}

// tenantLost records what Set.OnInterestLost reported; the connections'
// reader goroutines append, the test reads: the lock is for that.
type tenantLost struct {
	mu   sync.Mutex
	seen map[tenancy.TenantID][]string
}

func (l *tenantLost) add(t tenancy.TenantID, s string) {
	l.mu.Lock()
	l.seen[t] = append(l.seen[t], s)
	l.mu.Unlock()
}

func (l *tenantLost) has(t tenancy.TenantID, s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range l.seen[t] {
		if x == s {
			return true
		}
	}
	return false
}

// Each tenant's leaf connection delivers into its own account: a client
// of account A subscribed to _INBOX.a gets a delivery with a $JS.ACK reply
// through A's leaf, shown on the stored subject; B's leaf neither sees
// A's inbox nor reaches it, even when B has an inbox of the same name.
// Interest, and its loss, are told per account.
func TestSetDeliversInEachTenantsAccount(t *testing.T) {
	h := startTwoAccounts(t)
	s := h.dialSet(t, h.logins())
	if s.Len() != 2 {
		t.Fatalf("%d connections, want one per account", s.Len())
	}
	if _, ok := s.For(tenancy.TenantID{}); ok {
		t.Fatal("a connection for the default tenant, which has no login")
	}
	a, b := mustFor(t, s, h.tA), mustFor(t, s, h.tB)
	lost := &tenantLost{seen: map[tenancy.TenantID][]string{}}
	s.OnInterestLost(lost.add)

	ncA, ncB := h.client(t, "a", "pa"), h.client(t, "b", "pb")
	inA := make(chan *nats.Msg, 10)
	subA, err := ncA.ChanSubscribe("_INBOX.a", inA)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "A's leaf to hear of _INBOX.a", 30*time.Second, func() bool { return a.Interested("_INBOX.a") })
	inB := subscribe(t, ncB, b, "_INBOX.b")
	if b.Interested("_INBOX.a") || a.Interested("_INBOX.b") || s.Interested(h.tB, "_INBOX.a") || !s.Interested(h.tA, "_INBOX.a") {
		t.Fatal("a leaf sees the other account's inbox")
	}
	other := tenancy.TenantID(uuid.New())
	if err := s.Publish(other, "_INBOX.a", "", nil, []byte("x")); !errors.Is(err, leaf.ErrNoConnection) || s.Interested(other, "_INBOX.a") {
		t.Fatalf("a tenant without a login: publish %v", err)
	}

	// B's leaf publishes on _INBOX.a: its own account's subscriber of that
	// name gets it; A's does not (A's next message is A's own delivery,
	// sent after B's message was already handed out).
	sameName := subscribe(t, ncB, b, "_INBOX.a")
	if err := b.Publish("_INBOX.a", ackReply+"@"+shown, nil, []byte("from-b")); err != nil {
		t.Fatal(err)
	}
	if m := receive(t, sameName); string(m.Data) != "from-b" {
		t.Fatalf("B's subscriber got %q", m.Data)
	}
	if err := s.Publish(h.tA, "_INBOX.a", ackReply+"@"+shown, nil, []byte("from-a")); err != nil {
		t.Fatal(err)
	}
	m := receive(t, inA)
	if string(m.Data) != "from-a" || m.Subject != shown || m.Reply != ackReply {
		t.Fatalf("A's inbox got %q on %q reply %q, want A's delivery on %q reply %q", m.Data, m.Subject, m.Reply, shown, ackReply)
	}
	if len(inB) != 0 {
		t.Fatalf("B's other inbox got %d messages", len(inB))
	}

	// A's subscriber goes: A's connection reports it lost for tenant A;
	// B's subscriber of the same name keeps B's interest.
	if err := subA.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "tenant A's loss of _INBOX.a", 30*time.Second, func() bool { return lost.has(h.tA, "_INBOX.a") })
	if a.Interested("_INBOX.a") {
		t.Fatal("A's leaf still sees _INBOX.a")
	}
	if lost.has(h.tB, "_INBOX.a") || !b.Interested("_INBOX.a") {
		t.Fatal("A's unsubscribe took B's interest in its own _INBOX.a")
	}
}

// A login the hub refuses fails the set, naming the account and not the
// password; two logins for one tenant, or two accounts as one user, are
// refused before anything is dialled.
func TestDialSetRefusals(t *testing.T) {
	h := startTwoAccounts(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := leaf.Config{URL: h.ns.LeafURL()}

	wrong := h.logins()
	secret := wrong[1].Password + "-wrong"
	wrong[1].Password = secret
	s, err := leaf.DialSet(ctx, base, wrong)
	if !errors.Is(err, leaf.ErrRefused) || !strings.Contains(err.Error(), `"B"`) || strings.Contains(err.Error(), secret) {
		t.Fatalf("a wrong password for B: %v", err)
	}
	if s != nil {
		t.Fatal("a set despite the error")
	}

	// A user bound to A cannot stand in for B: the hub binds the
	// account by user, whatever the bridge says.
	swapped := h.logins()
	swapped[1].User, swapped[1].Password = swapped[0].User, swapped[0].Password
	if _, err := leaf.DialSet(ctx, base, swapped); err == nil || !strings.Contains(err.Error(), "same user") {
		t.Fatalf("two accounts as one user: %v", err)
	}
	twice := h.logins()
	twice[1].Tenant = twice[0].Tenant
	if _, err := leaf.DialSet(ctx, base, twice); err == nil || !strings.Contains(err.Error(), "two logins") {
		t.Fatalf("two logins for one tenant: %v", err)
	}
}

// ACCOUNT=user:password,... gives each login its account's tenant; every
// mapped account needs one login and every login a mapped account, and
// no error shows a password.
func TestParseLogins(t *testing.T) {
	tA, tB := tenancy.TenantID(uuid.New()), tenancy.TenantID(uuid.New())
	tenants := map[string]tenancy.TenantID{"A": tA, "B": tB}
	got, err := leaf.ParseLogins(" A=leaf-a:pw:with:colons , B=leaf-b:pb,", tenants)
	if err != nil {
		t.Fatal(err)
	}
	want := []leaf.Login{
		{Tenant: tA, Account: "A", User: "leaf-a", Password: "pw:with:colons"},
		{Tenant: tB, Account: "B", User: "leaf-b", Password: "pb"},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for _, bad := range []struct{ list, says string }{
		{"A=leaf-a:sekrit1", `account "B" has no login`},
		{"A=leaf-a:sekrit1,B=leaf-b:sekrit2,C=leaf-c:sekrit3", `entry 3: account "C" is not mapped`},
		{"A=leaf-a:sekrit1,A=leaf-x:sekrit2,B=leaf-b:sekrit3", `entry 2: account "A" has a login already`},
		{"A=leaf-a:sekrit1,B=leaf-bsekrit2", "entry 2 is not ACCOUNT=user:password"},
		{"A=leaf-a:,B=leaf-b:sekrit2", "entry 1 is not ACCOUNT=user:password"},
		{"leaf-a:sekrit1,B=leaf-b:sekrit2", "entry 1 is not ACCOUNT=user:password"},
	} {
		_, err := leaf.ParseLogins(bad.list, tenants)
		if err == nil || !strings.Contains(err.Error(), bad.says) || strings.Contains(err.Error(), "sekrit") {
			t.Errorf("%s: %v, want %q and no password", bad.list, err, bad.says)
		}
	}
}
