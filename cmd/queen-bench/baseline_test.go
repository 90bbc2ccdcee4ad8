package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queenbridge/queenbridge/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Each baseline writes, in real PostgreSQL, exactly the messages it reports,
// and the partitioned log keeps every partition's offsets dense.
func TestBaselinesWriteWhatTheyReport(t *testing.T) {
	dsn := testenv.NewDatabase(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	count := func(sql string) int64 {
		t.Helper()
		var n int64
		if err := conn.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n
	}
	for _, target := range []string{"direct", "partitioned", "batch"} {
		var out strings.Builder
		r, err := run(ctx, options{target: target, pgDSN: dsn, clients: 4, items: 3, partitions: 5, queues: 2,
			payload: 120, duration: 400 * time.Millisecond, run: "t-" + target}, &out)
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		if r.items == 0 || r.errs != 0 || r.statuses["queued"] != r.items {
			t.Fatalf("%s: %d items, %d errors, statuses %v\n%s", target, r.items, r.errs, r.statuses, out.String())
		}
		table := "queen_bench.messages"
		if target == "partitioned" {
			table = "queen_bench.log"
			if gaps := count(`SELECT count(*) FROM queen_bench.partitions p
				WHERE p.last_offset <> (SELECT count(*) FROM queen_bench.log l WHERE l.partition_id = p.id)
				   OR p.last_offset <> coalesce((SELECT max("offset") FROM queen_bench.log l WHERE l.partition_id = p.id), 0)`); gaps != 0 {
				t.Fatalf("partitioned: %d partitions whose offsets are not dense", gaps)
			}
		}
		if n := count(`SELECT count(*) FROM ` + table); n != r.items {
			t.Fatalf("%s: %d rows stored, %d reported", target, n, r.items)
		}
		if n := count(`SELECT count(*) FROM ` + table + ` WHERE octet_length(payload) <> 120`); n != 0 {
			t.Fatalf("%s: %d payloads of the wrong size", target, n)
		}
		if !strings.Contains(out.String(), "cpu/item   bridge n/a µs, postgres ") {
			t.Fatalf("%s: report lacks the CPU split:\n%s", target, out.String())
		}
	}
}

// -group sends every item of a request to one partition; without it the
// items of a request spread.
func TestGroupSendsARequestToOnePartition(t *testing.T) {
	o := options{items: 10, partitions: 100, queues: 3, run: "g"}
	spread := newGenerator(o).items(2, 7)
	o.group = true
	grouped := newGenerator(o).items(2, 7)
	parts := map[string]bool{}
	for _, it := range grouped {
		parts[it.queue+"/"+it.partition] = true
	}
	if len(parts) != 1 {
		t.Fatalf("grouped request spans %v", parts)
	}
	parts = map[string]bool{}
	for _, it := range spread {
		parts[it.queue+"/"+it.partition] = true
	}
	if len(parts) != 10 {
		t.Fatalf("spread request spans %d partitions, want 10", len(parts))
	}
}

// countStatuses counts what encoding/json would decode, and refuses what is
// not a result array.
func TestCountStatusesMatchesDecoding(t *testing.T) {
	answer := []byte(`[{"index":0,"status":"queued","messageId":"x","error":"a \"status\":\"fake\" inside"},` +
		`{"index":1,"status":"duplicate"},{"index":2,"status":"queued"},{"index":3,"status":"failed","error":"spool write failed"}]`)
	var decoded []struct{ Status string }
	if err := json.Unmarshal(answer, &decoded); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	for _, r := range decoded {
		want[r.Status]++
	}
	got, err := countStatuses(answer)
	if err != nil || len(got) != len(want) {
		t.Fatalf("counted %v, %v; decoding says %v", got, err, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("counted %v; decoding says %v", got, want)
		}
	}
	if _, err := countStatuses([]byte(`{"error":"items[0].queue is required"}`)); err == nil {
		t.Fatal("an error object must be refused")
	}
	// the transactionIds are unique per client, request and item
	seen := map[string]bool{}
	g := newGenerator(options{items: 3, partitions: 5, queues: 2, run: "r"})
	for c := 0; c < 3; c++ {
		for i := 0; i < 4; i++ {
			for _, it := range g.items(c, i) {
				if seen[it.txid] {
					t.Fatalf("transactionId %s repeats", it.txid)
				}
				seen[it.txid] = true
			}
		}
	}
}
