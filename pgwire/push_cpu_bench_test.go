package pgwire

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/queenbridge/queenbridge/internal/proccpu"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/segment"
)

// pushV0SQL calls the bundle function as migration 0002 defined it (one
// log_push_one_v1 call per segment, JSON results), loaded under other names
// into the benchmark's own database: migration 0009 dropped those functions.
const pushV0SQL = `SELECT queen.bench_push_multi_v0($1::text[], $2::text[], $3::int4[], $4::bytea[], $5::int8[], $6::bytea[], $7::uuid[], $8::int4[])`

// loadV0 defines bench_push_multi_v0, bench_push_one_v0 and bench_probe_v0
// from 0002's text. Every function of that file is renamed, so that loading
// it replaces none of the schema's own.
func loadV0(ctx context.Context, db *DB) error {
	body, err := os.ReadFile("schema/migrations/0002_push_functions.sql")
	if err != nil {
		return err
	}
	sql := strings.NewReplacer("queen.log_push_multi_v1", "queen.bench_push_multi_v0",
		"queen.log_push_one_v1", "queen.bench_push_one_v0", "queen.log_probe_v1", "queen.bench_probe_v0",
		"queen.log_segment_at_v1", "queen.bench_segment_at_v0").Replace(string(body))
	_, err = db.Pool().Exec(ctx, sql)
	return err
}

// The floor sub-benchmarks' functions are scalar statements on one fixed
// partition with no guard, probe, array or result set (floorSQL):
//
//	bench_noop                    a plpgsql call that does nothing
//	bench_update_insert           move a partition row's offset, insert one
//	                              row into a copy of log_segments
//	bench_update_insert_txn       the same and one row into a copy of log_txns
//	bench_lock_update_insert_txn  the same after a separate FOR UPDATE: the
//	                              rows and locks log_push_multi_v2 writes for
//	                              one segment
//
// They show what any bundle function of that shape costs at one segment.
const (
	floorLock   = "PERFORM 1 FROM public.bench_floor_part WHERE id = 1 FOR UPDATE;"
	floorUpdate = "UPDATE public.bench_floor_part SET last_offset = last_offset + 1 WHERE id = 1 RETURNING last_offset INTO v_last;"
	floorSeg    = `INSERT INTO public.bench_floor_seg (partition_id, end_offset, base_offset, msg_count, created_at, payload)
    VALUES (1, v_last, v_last, 1, clock_timestamp(), p_blob);`
	floorTxn = `INSERT INTO public.bench_floor_txn (partition_id, end_offset, base_offset, created_at, hashes)
    VALUES (1, v_last, v_last, clock_timestamp(), substring(p_blob FOR 16));`
)

// floorFunction defines public.name(p_blob bytea) running the statements.
func floorFunction(name string, statements ...string) string {
	return "CREATE FUNCTION public." + name + "(p_blob bytea) RETURNS bigint LANGUAGE plpgsql AS $$\nDECLARE v_last bigint;\nBEGIN\n    " +
		strings.Join(statements, "\n    ") + "\n    RETURN v_last;\nEND $$;\n"
}

var floorSQL = `
CREATE TABLE public.bench_floor_part (id bigint PRIMARY KEY, last_offset bigint NOT NULL) WITH (fillfactor = 70);
INSERT INTO public.bench_floor_part VALUES (1, 0);
CREATE TABLE public.bench_floor_seg (LIKE queen.log_segments INCLUDING ALL);
CREATE TABLE public.bench_floor_txn (LIKE queen.log_txns INCLUDING ALL);
CREATE FUNCTION public.bench_noop(p_blob bytea) RETURNS void LANGUAGE plpgsql AS $$ BEGIN END $$;
` + floorFunction("bench_update_insert", floorUpdate, floorSeg) +
	floorFunction("bench_update_insert_txn", floorUpdate, floorSeg, floorTxn) +
	floorFunction("bench_lock_update_insert_txn", floorLock, floorUpdate, floorSeg, floorTxn)

// BenchmarkBundleBackendCPU measures what one bundle call costs the
// PostgreSQL backends that run it: their CPU time from /proc, per call,
// for the bundle call as migration 0002 defined it (v0: a function call per
// segment) and log_push_multi_v2 at callers × segments of one
// 200-byte frame each, with a tight p_verified (no probe), beside one
// INSERT + COMMIT of the same payload in the same run, and the floor under
// any bundle function (floor-noop-call, floor-update-insert). Metrics:
//
//	backend-µs/call   backend CPU per call
//	x-commit          that, as a multiple of one INSERT + COMMIT
//	seg-x-commit      (1 × 64 rows) the cost of each further segment:
//	                  (call(64) - call(1)) / 63, as a multiple of the commit
//
// Machines of this kind differ by 2× in absolute µs; the ratios carry over.
// Run with: go test ./pgwire -run '^$' -bench BundleBackendCPU -benchtime 2000x
func BenchmarkBundleBackendCPU(b *testing.B) {
	dsn := testenv.NewDatabase(b)
	ctx := context.Background()
	db, err := Open(ctx, Config{DSN: dsn, MaxConns: 4})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Pool().Exec(ctx, `CREATE TABLE public.bench_commit (id bigserial PRIMARY KEY, payload bytea NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	if err := loadV0(ctx, db); err != nil {
		b.Fatal(err)
	}
	payload := []byte(`{"data":"` + strings.Repeat("x", 189) + `"}`)
	var commitCPU float64 // µs, from the commit sub-benchmark
	oneSeg := map[string]float64{}

	b.Run("insert-commit", func(b *testing.B) {
		commitCPU = backendCPU(b, dsn, 1, func(conn *pgx.Conn, _, _ int) error {
			_, err := conn.Exec(ctx, `INSERT INTO public.bench_commit (payload) VALUES ($1)`, payload)
			return err
		})
	})
	// The floor under any bundle function of this schema (floorSQL), each
	// call in its own transaction.
	if _, err := db.Pool().Exec(ctx, floorSQL); err != nil {
		b.Fatal(err)
	}
	for _, floor := range []struct{ name, sql string }{
		{"floor-noop-call", `SELECT public.bench_noop($1)`},
		{"floor-update-insert", `SELECT public.bench_update_insert($1)`},
		{"floor-update-insert-txn", `SELECT public.bench_update_insert_txn($1)`},
		{"floor-lock-update-insert-txn", `SELECT public.bench_lock_update_insert_txn($1)`},
	} {
		b.Run(floor.name, func(b *testing.B) {
			cpu := backendCPU(b, dsn, 1, func(conn *pgx.Conn, _, _ int) error {
				_, err := conn.Exec(ctx, floor.sql, payload)
				return err
			})
			if commitCPU > 0 {
				b.ReportMetric(cpu/commitCPU, "x-commit")
			}
		})
	}
	for _, fn := range []string{"known", "v2", "v0"} {
		for _, shape := range [][2]int{{1, 1}, {1, 64}, {16, 64}} {
			callers, segs := shape[0], shape[1]
			if fn == "v0" && callers > 1 {
				continue // minutes per run, and 0002's figure is in docs/write-path.md
			}
			b.Run(fmt.Sprintf("%s/callers=%d/segments=%d", fn, callers, segs), func(b *testing.B) {
				// Writes and partitions are made before the measured loop;
				// each caller writes its own partitions, one frame each.
				pids := make([][]int64, callers)
				qids := make([][]int64, callers)
				var seq int64
				build := func(c int) []segment.Write {
					writes := make([]segment.Write, segs)
					for s := range writes {
						seq++
						fr := []segment.Frame{{ID: uuid.Must(uuid.NewV7()), TransactionID: fmt.Sprint(fn, seq), Payload: payload}}
						writes[s] = segment.Write{Queue: "bench." + fn, Partition: fmt.Sprintf("c%d-p%d", c, s), Count: 1,
							Hashes: segment.AppendHashes(nil, fr), Blob: segment.Pack(nil, fr), Verified: 1 << 62}
						if pids[c] != nil {
							writes[s].PartitionID, writes[s].QueueID = pids[c][s], qids[c][s]
						}
					}
					return writes
				}
				for c := range pids {
					res, err := db.PushBundle(ctx, build(c))
					if err != nil {
						b.Fatal(err)
					}
					pids[c], qids[c] = make([]int64, segs), make([]int64, segs)
					for s, r := range res {
						pids[c][s], qids[c][s] = r.PartitionID, r.QueueID
					}
				}
				var mu sync.Mutex // guards seq and build's use of it
				cpu := backendCPU(b, dsn, callers, func(conn *pgx.Conn, c, _ int) error {
					mu.Lock()
					writes := build(c)
					mu.Unlock()
					a := newBundleArgs(writes)
					switch fn {
					case "v0":
						var raw []byte
						return conn.QueryRow(ctx, pushV0SQL, a.queues, a.partitions, a.counts, a.hashes, a.verified, a.blobs, a.tenants, a.minWindows).Scan(&raw)
					case "known":
						ords := make([]int, len(writes))
						for i := range ords {
							ords[i] = i
						}
						out, written := make([]segment.Result, len(writes)), make([]bool, len(writes))
						if err := newKnownArgs(writes, ords).call(ctx, conn, out, written); err != nil {
							return err
						}
						for i, ok := range written {
							if !ok {
								return fmt.Errorf("known-partition statement left segment %d unwritten", i)
							}
						}
						return nil
					}
					w, err := a.call(ctx, conn)
					if err == nil {
						_, err = w.results(segs)
					}
					return err
				})
				if commitCPU > 0 {
					b.ReportMetric(cpu/commitCPU, "x-commit")
				}
				if callers == 1 && segs == 1 {
					oneSeg[fn] = cpu
				}
				if callers == 1 && segs == 64 && commitCPU > 0 && oneSeg[fn] > 0 {
					b.ReportMetric((cpu-oneSeg[fn])/63/commitCPU, "seg-x-commit")
				}
			})
		}
	}
}

// backendCPU runs call b.N times on each of callers connections of their
// own and reports (and returns) the CPU their backends used per call, in µs.
func backendCPU(b *testing.B, dsn string, callers int, call func(conn *pgx.Conn, caller, i int) error) float64 {
	ctx := context.Background()
	conns := make([]*pgx.Conn, callers)
	pids := make([]int, callers)
	for c := range conns {
		cc, err := pgx.ParseConfig(dsn)
		if err != nil {
			b.Fatal(err)
		}
		for k, v := range sessionSettings { // as the bridge's pool sets them
			cc.RuntimeParams[k] = v
		}
		conn, err := pgx.ConnectConfig(ctx, cc)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close(ctx)
		conns[c] = conn
		var pid int32
		if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			b.Fatal(err)
		}
		pids[c] = int(pid)
		for i := 0; i < 3; i++ { // warm the plan caches outside the measurement
			if err := call(conn, c, -1); err != nil {
				b.Fatal(err)
			}
		}
	}
	total := func() time.Duration {
		var sum time.Duration
		for _, pid := range pids {
			d, err := proccpu.Process(pid)
			if err != nil {
				b.Fatalf("backend CPU of pid %d (the benchmark needs a PostgreSQL on this machine): %v", pid, err)
			}
			sum += d
		}
		return sum
	}
	before := total()
	b.ResetTimer()
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for c := range conns {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; i < b.N; i++ {
				if err := call(conns[c], c, i); err != nil {
					errs <- err
					return
				}
			}
		}(c)
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	perCall := float64(total()-before) / float64(time.Microsecond) / float64(b.N*callers)
	b.ReportMetric(perCall, "backend-µs/call")
	return perCall
}
