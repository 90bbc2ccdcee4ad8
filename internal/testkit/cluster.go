package testkit

import (
	"fmt"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/embedded"
)

// NATSCluster starts n embedded NATS servers routed to each other on
// loopback, waits until every one has routes to the others, and stops them
// when the test ends.
func NATSCluster(t testing.TB, n int) []*embedded.NATS {
	t.Helper()
	var nodes []*embedded.NATS
	for i := 0; i < n; i++ {
		cfg := embedded.NATSConfig{Listen: "-1", Cluster: "127.0.0.1:-1", ServerName: fmt.Sprintf("n%d", i)}
		if i > 0 {
			cfg.Routes = []string{nodes[0].ClusterURL()}
		}
		s, err := embedded.StartNATS(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Stop)
		nodes = append(nodes, s)
	}
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < n; {
		if nodes[i].Server().NumRoutes() >= n-1 {
			i++
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("the NATS cluster did not form: server %d has %d routes", i, nodes[i].Server().NumRoutes())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nodes
}
