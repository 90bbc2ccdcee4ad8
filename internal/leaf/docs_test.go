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

	"github.com/nats-io/nats-server/v2/server"
	"github.com/queenbridge/queenbridge/internal/leaf"
)

// The leafnodes block docs/jetstream.md tells an operator to add starts a
// nats-server, and the settings it gives the bridge connect a leaf to it
// (on a free port instead of the page's 7422) that delivers to a client
// with a $JS.ACK reply.
func TestDocumentedLeafnodesBlockWorks(t *testing.T) {
	doc, err := os.ReadFile("../../docs/jetstream.md")
	if err != nil {
		t.Fatal(err)
	}
	const title = "## Delivering to JetStream consumers: the leafnode connection"
	_, section, ok := strings.Cut(string(doc), title+"\n")
	if !ok {
		t.Fatalf("docs/jetstream.md has no section %q", title)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	block := func(lang string) string {
		m := regexp.MustCompile("(?s)```" + lang + "\n(.*?)```").FindStringSubmatch(section)
		if m == nil {
			t.Fatalf("the section has no ```%s block", lang)
		}
		return m[1]
	}
	conf, sh := block("conf"), block("sh")
	env := map[string]string{}
	for _, m := range regexp.MustCompile(`(QUEEN_[A-Z_]+)=(\S+)`).FindAllStringSubmatch(sh, -1) {
		env[m[1]] = m[2]
	}
	u, err := leaf.ParseURL(env["QUEEN_NATS_LEAF_URL"])
	if err != nil {
		t.Fatalf("the page's QUEEN_NATS_LEAF_URL: %v", err)
	}
	if !strings.Contains(conf, `listen: "`+u[0].Host+`"`) {
		t.Fatalf("QUEEN_NATS_LEAF_URL %s is not the block's listen address:\n%s", u[0].Host, conf)
	}
	if env["QUEEN_NATS_URL"] == "" || env["QUEEN_NATS_LEAF_USER"] == "" || env["QUEEN_NATS_LEAF_PASSWORD"] == "" {
		t.Fatalf("the example sets %v; it needs QUEEN_NATS_URL and the leaf user and password", env)
	}

	file := filepath.Join(t.TempDir(), "nats.conf")
	free := strings.Replace(conf, u[0].Host, "127.0.0.1:-1", 1)
	if err := os.WriteFile(file, []byte(free), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(file)
	if err != nil {
		t.Fatalf("the documented block does not parse: %v\n%s", err, conf)
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := leaf.Dial(ctx, leaf.Config{
		URL:  "nats-leaf://127.0.0.1:" + strconv.Itoa(vz.LeafNode.Port),
		User: env["QUEEN_NATS_LEAF_USER"], Password: env["QUEEN_NATS_LEAF_PASSWORD"],
	})
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
