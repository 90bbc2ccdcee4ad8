package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testkit"
)

// The jetstream target against a real JetStream stream it creates: every
// message it counts was acknowledged by the stream and is stored in it,
// each once.
func TestJetStreamTargetCountsWhatTheStreamStored(t *testing.T) {
	ns, _ := jsTestServer(t)
	var report strings.Builder
	o := options{target: "jetstream", natsURL: ns.ClientURL(), clients: 3, partitions: 5, payload: 200, duration: 300 * time.Millisecond,
		run: "t", js: jsOptions{stream: "BENCH", subject: "bench.js", window: 16, create: true}}
	r, err := runJetStream(context.Background(), o, &report)
	if err != nil {
		t.Fatal(err)
	}
	if r.items == 0 || r.errs != 0 {
		t.Fatalf("%d acknowledged, %d errors:\n%s", r.items, r.errs, report.String())
	}
	_, j := testkit.JetStream(t, ns.ClientURL())
	s, err := j.Stream(context.Background(), "BENCH")
	if err != nil {
		t.Fatal(err)
	}
	if st := s.CachedInfo().State; st.Msgs != uint64(r.items) || st.NumSubjects != 5 {
		t.Fatalf("the stream holds %d messages on %d subjects; %d were acknowledged", st.Msgs, st.NumSubjects, r.items)
	}
	if !strings.Contains(report.String(), "jetstream PublishAsync to stream BENCH") {
		t.Fatalf("report:\n%s", report.String())
	}
}
