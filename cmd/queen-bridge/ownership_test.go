package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
)

// metric reads one unlabelled sample from a bridge's metrics; -1 when the
// bridge does not answer.
func metric(addr, name string) float64 {
	resp, err := http.Get("http://" + addr + "/metrics/prometheus")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

// natsLoad pushes one-item requests through NATS until stopped; a request
// that gets no answer is sent again with the same transactionId until one
// comes, so every item it started ends acknowledged.
type natsLoad struct {
	mu    sync.Mutex // guards acked: the pushers add, the test reads
	acked map[string]string
	stop  chan struct{}
	wg    sync.WaitGroup
}

func (l *natsLoad) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

func (l *natsLoad) run(t *testing.T, urls []string, workers int) {
	for w := 0; w < workers; w++ {
		l.wg.Add(1)
		go func(w int) {
			defer l.wg.Done()
			nc, err := nats.Connect(urls[w%len(urls)], nats.MaxReconnects(-1))
			if err != nil {
				t.Error(err)
				return
			}
			defer nc.Close()
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				tx := fmt.Sprintf("w%d-%d", w, i)
				// Every worker cycles through all 30 partitions: NATS
				// prefers the bridge on the client's own server, so a
				// worker's partitions are what that bridge receives.
				body := `{"items":[{"queue":"owned","partition":"p` + strconv.Itoa((i*7+w)%30) + `","transactionId":"` + tx + `","payload":{"i":1}}]}`
				for {
					msg, err := nc.Request("queen.v1.push", []byte(body), 3*time.Second)
					var rs []struct{ Status string }
					if err == nil && json.Unmarshal(msg.Data, &rs) == nil && len(rs) == 1 &&
						(rs[0].Status == "queued" || rs[0].Status == "duplicate" || rs[0].Status == "buffered") {
						l.mu.Lock()
						l.acked[tx] = rs[0].Status
						l.mu.Unlock()
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		}(w)
	}
}

// Three bridge processes on a three-node NATS cluster and one database. One
// is killed (SIGKILL) under load and started again: its buckets move to the
// other two and back, every acknowledged item is stored exactly once, every
// partition's offsets are dense, and ownership settles again.
func TestKilledOwnerUnderLoad(t *testing.T) {
	bin := binary(t)
	dsn := testenv.NewDatabase(t)
	cluster := testkit.NATSCluster(t, 3)
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	start := func(i int) *running {
		return startBinary(t, bin, "QUEEN_NATS_URL="+cluster[i].ClientURL(), "QUEEN_PG_DSN="+dsn, "QUEEN_DATA_DIR="+dirs[i],
			"QUEEN_OWNERSHIP_HEARTBEAT_MS=100", "QUEEN_FORWARD_TIMEOUT_MS=1000")
	}
	bridges := []*running{start(0), start(1), start(2)}
	settled := func() bool {
		owned := 0.0
		for _, b := range bridges {
			if metric(b.http, "queen_ownership_bridges") != 3 {
				return false
			}
			owned += metric(b.http, "queen_ownership_owned_buckets")
		}
		return owned == 1024
	}
	testkit.WaitFor(t, "ownership to settle over three bridges", 90*time.Second, settled)

	l := &natsLoad{acked: map[string]string{}, stop: make(chan struct{})}
	l.run(t, []string{cluster[0].ClientURL(), cluster[1].ClientURL(), cluster[2].ClientURL()}, 6)
	testkit.WaitFor(t, "load before the kill", 90*time.Second, func() bool { return l.count() >= 300 })
	_ = bridges[1].Cmd.Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	<-bridges[1].Done
	before := l.count()
	testkit.WaitFor(t, "the survivors to take the dead bridge's buckets", 90*time.Second, func() bool {
		return metric(bridges[0].http, "queen_ownership_bridges") == 2 && metric(bridges[2].http, "queen_ownership_bridges") == 2 &&
			metric(bridges[0].http, "queen_ownership_owned_buckets")+metric(bridges[2].http, "queen_ownership_owned_buckets") == 1024
	})
	t.Logf("the survivors owned every bucket %v after the kill", time.Since(killed).Round(time.Millisecond))
	testkit.WaitFor(t, "load while one bridge is dead", 90*time.Second, func() bool { return l.count() >= before+300 })
	restarted := time.Now()
	bridges[1] = start(1)
	testkit.WaitFor(t, "ownership to settle after the restart", 90*time.Second, settled)
	t.Logf("ownership settled %v after the killed bridge was ready again", time.Since(restarted).Round(time.Millisecond))
	before = l.count()
	testkit.WaitFor(t, "load after the restart", 90*time.Second, func() bool { return l.count() >= before+300 })
	close(l.stop)
	l.wg.Wait()
	if got := metric(bridges[1].http, "queen_forward_received_groups_total"); got <= 0 {
		t.Fatalf("the restarted bridge received %v forwarded groups: it did not take its buckets back (the others forwarded %v and %v, fell back %v and %v)", got,
			metric(bridges[0].http, "queen_forward_groups_total"), metric(bridges[2].http, "queen_forward_groups_total"),
			metric(bridges[0].http, "queen_forward_fallback_groups_total"), metric(bridges[2].http, "queen_forward_fallback_groups_total"))
	}
	testkit.WaitFor(t, "the spools to drain", 90*time.Second, func() bool {
		return spoolEmpty(bridges[0].http) && spoolEmpty(bridges[1].http) && spoolEmpty(bridges[2].http)
	})
	for _, b := range bridges {
		b.interrupt(t)
	}

	stored := storedOnce(t, dsn, l.acked)
	db, err := pgwire.Open(context.Background(), pgwire.Config{DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Dense: each partition's segments tile 1..last_offset.
	var gaps int64
	if err := db.Pool().QueryRow(context.Background(), `
		SELECT count(*) FROM queen.log_partitions p
		WHERE p.last_offset <> (SELECT coalesce(sum(s.end_offset - s.base_offset + 1), 0) FROM queen.log_segments s WHERE s.partition_id = p.id)
		   OR EXISTS (SELECT 1 FROM queen.log_segments s WHERE s.partition_id = p.id AND s.base_offset > 1
		              AND NOT EXISTS (SELECT 1 FROM queen.log_segments s2 WHERE s2.partition_id = p.id AND s2.end_offset = s.base_offset - 1))`).Scan(&gaps); err != nil {
		t.Fatal(err)
	}
	if gaps != 0 {
		t.Fatalf("%d partitions have offsets that are not dense", gaps)
	}
	t.Logf("%d acknowledged, %d stored, none twice, offsets dense", len(l.acked), stored)
}
