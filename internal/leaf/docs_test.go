package leaf_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/internal/leaf"
	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// documented is one part of docs/jetstream.md's leafnode section: its
// server block and the settings its shell example gives the bridge.
type documented struct {
	conf string
	env  map[string]string
	url  string // host:port of QUEEN_NATS_LEAF_URL
}

// readDocumented reads the part of docs/jetstream.md from the heading
// title to the next heading of its level or above.
func readDocumented(t *testing.T, title string) documented {
	t.Helper()
	doc, err := os.ReadFile("../../docs/jetstream.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), title+"\n")
	if !ok {
		t.Fatalf("docs/jetstream.md has no section %q", title)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	if strings.HasPrefix(title, "### ") {
		section, _, _ = strings.Cut(section, "\n### ")
	}
	block := func(lang string) string {
		m := regexp.MustCompile("(?s)```" + lang + "\n(.*?)```").FindStringSubmatch(section)
		if m == nil {
			t.Fatalf("the section %q has no ```%s block", title, lang)
		}
		return m[1]
	}
	d := documented{conf: block("conf"), env: map[string]string{}}
	for _, m := range regexp.MustCompile(`(QUEEN_[A-Z_]+)=(\S+)`).FindAllStringSubmatch(block("sh"), -1) {
		d.env[m[1]] = m[2]
	}
	u, err := leaf.ParseURL(d.env["QUEEN_NATS_LEAF_URL"])
	if err != nil {
		t.Fatalf("the section's QUEEN_NATS_LEAF_URL: %v", err)
	}
	d.url = u[0].Host
	if !strings.Contains(d.conf, `listen: "`+d.url+`"`) {
		t.Fatalf("QUEEN_NATS_LEAF_URL %s is not the block's listen address:\n%s", d.url, d.conf)
	}
	if d.env["QUEEN_NATS_URL"] == "" {
		t.Fatalf("the example sets %v; it needs QUEEN_NATS_URL", d.env)
	}
	return d
}

// start runs a nats-server from prefix and the documented block, its
// leafnode listener on a free port instead of the page's, and returns it
// with the leaf URL to dial.
func (d documented) start(t *testing.T, prefix string) (*server.Server, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "nats.conf")
	free := prefix + strings.Replace(d.conf, d.url, "127.0.0.1:-1", 1)
	if err := os.WriteFile(file, []byte(free), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(file)
	if err != nil {
		t.Fatalf("the documented block does not parse: %v\n%s", err, d.conf)
	}
	opts.Host, opts.Port, opts.NoLog, opts.NoSigs = "127.0.0.1", -1, true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(30 * time.Second) {
		t.Fatal("the server with the documented block did not start")
	}
	vz, err := srv.Varz(nil)
	if err != nil {
		t.Fatal(err)
	}
	return srv, "nats-leaf://127.0.0.1:" + strconv.Itoa(vz.LeafNode.Port)
}

// The leafnodes block docs/jetstream.md tells an operator to add starts a
// nats-server, and the settings it gives the bridge connect a leaf to it
// (on a free port instead of the page's 7422) that delivers to a client
// with a $JS.ACK reply.
func TestDocumentedLeafnodesBlockWorks(t *testing.T) {
	d := readDocumented(t, "## Delivering to JetStream consumers: the leafnode connection")
	if d.env["QUEEN_NATS_LEAF_USER"] == "" || d.env["QUEEN_NATS_LEAF_PASSWORD"] == "" {
		t.Fatalf("the example sets %v; it needs the leaf user and password", d.env)
	}
	srv, leafURL := d.start(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := leaf.Dial(ctx, leaf.Config{URL: leafURL, User: d.env["QUEEN_NATS_LEAF_USER"], Password: d.env["QUEEN_NATS_LEAF_PASSWORD"]})
	if err != nil {
		t.Fatalf("the leaf with the documented user: %v", err)
	}
	defer c.Close()
	h := &hub{client: strings.TrimPrefix(srv.ClientURL(), "nats://")}
	in := subscribe(t, h.natsClient(t), c, "_INBOX.doc")
	if err := c.Publish("_INBOX.doc", ackReply+"@"+shown, nil, []byte("d")); err != nil {
		t.Fatal(err)
	}
	if m := receive(t, in); m.Subject != shown || m.Reply != ackReply {
		t.Fatalf("subject %q reply %q", m.Subject, m.Reply)
	}
}

// The accounts mode's block, added to deploy/nats/accounts.conf, starts a
// nats-server; the QUEEN_NATS_LEAF_ACCOUNTS of the page's example parse
// against its QUEEN_NATS_ACCOUNTS and dial one leaf per tenant, each in
// its own account: tenant A's delivers to tenant A's client with a
// $JS.ACK reply, tenant B's does not see A's inbox.
func TestDocumentedAccountsLeafnodesBlockWorks(t *testing.T) {
	d := readDocumented(t, "### In the accounts mode: one leaf user per tenant account")
	if d.env["QUEEN_NATS_LEAF_USER"] != "" || d.env["QUEEN_NATS_LEAF_PASSWORD"] != "" {
		t.Fatal("the accounts mode's example sets the single leaf user, which the accounts mode refuses")
	}
	example, err := os.ReadFile("../../deploy/nats/accounts.conf")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("QUEEN_NATS_BRIDGE_PASSWORD", "bridge-pw")
	t.Setenv("QUEEN_NATS_TENANT_A_PASSWORD", "a-pw")
	t.Setenv("QUEEN_NATS_TENANT_B_PASSWORD", "b-pw")
	srv, leafURL := d.start(t, string(example)+"\n")

	tenants := map[string]tenancy.TenantID{}
	for _, entry := range strings.Split(d.env["QUEEN_NATS_ACCOUNTS"], ",") {
		account, _, _ := strings.Cut(entry, "=")
		tenants[account] = tenancy.TenantID(uuid.New()) // the page's <uuid>
	}
	logins, err := leaf.ParseLogins(d.env["QUEEN_NATS_LEAF_ACCOUNTS"], tenants)
	if err != nil {
		t.Fatalf("the page's QUEEN_NATS_LEAF_ACCOUNTS: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	set, err := leaf.DialSet(ctx, leaf.Config{URL: leafURL}, logins)
	if err != nil {
		t.Fatalf("the leaves with the documented users: %v", err)
	}
	defer set.Close()
	a, okA := set.For(tenants["TENANT_A"])
	b, okB := set.For(tenants["TENANT_B"])
	if !okA || !okB {
		t.Fatalf("the page's example gives no leaf for TENANT_A (%v) or TENANT_B (%v)", okA, okB)
	}
	h := &hub{client: strings.TrimPrefix(srv.ClientURL(), "nats://")}
	in := subscribe(t, h.natsClient(t, nats.UserInfo("tenant-a", "a-pw")), a, "_INBOX.doc")
	if b.Interested("_INBOX.doc") {
		t.Fatal("tenant B's leaf sees tenant A's inbox")
	}
	if err := a.Publish("_INBOX.doc", ackReply+"@"+shown, nil, []byte("d")); err != nil {
		t.Fatal(err)
	}
	if m := receive(t, in); m.Subject != shown || m.Reply != ackReply {
		t.Fatalf("subject %q reply %q", m.Subject, m.Reply)
	}
}
