#!/usr/bin/env bash
# compare-jsconsume.sh: JetStream consumers on the bridge beside real
# JetStream (docs/benchmarks.md, "JetStream consumers"). Each round starts a
# fresh cluster with the embedded settings and a fresh bridge with
# QUEEN_JETSTREAM=BENCH=bench.js.>, then runs queen-bench's JetStream
# consumer load (-js-consume) on the bridge and on two real JetStream
# file-storage streams queen-bench starts itself (sync_interval: always, and
# the default sync), every mode on each:
#   push   16 PublishAsync publishers saturating, no consumer
#   drain  a backlog written for DURATION, then 16 Consume() consumers of one
#          durable drain it: consumed/s, CPU per consumed message ÷ per pushed
#   both   publishers saturating and the consumers at once
#   paced  the publishers on a timetable at a quarter of the same target's
#          push msgs/s in that round: publish-to-receive p50/p90/p99
#   lone   one publisher at 100 msgs/s, one consumer: p50/p90/p99
# 200-byte payloads over 100 subjects; every message acknowledged (Ack).
# The summary is the median of ROUNDS of every figure and ratio (each ratio
# from one round). Knobs (environment):
#   ROUNDS      3       rounds
#   DURATION    10s     per mode
#   MODES       all     -js-consume
#   TARGETS     bridge,always,default
#   EXTRA       (empty) more queen-bench flags, e.g. "-double-ack" or "-js-consumers 4"
#   SLOWSYNC_US (empty) when set, PostgreSQL runs under slowsync.so: every
#               fsync and fdatasync lasts at least this many µs (1000: a 1 ms flush)
#   OUT         a new temporary directory: every report, log and the summary
#               (a round's cluster files are deleted: KEEP_DATA=1 keeps them)
#   BRIDGE_BIN  (empty) a queen-bridge binary to measure instead of building this tree's
# Run it alone on a quiet machine: nothing else building or measuring.
#
#   cmd/queen-bench/compare-jsconsume.sh            # from the repository root
set -euo pipefail
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
MODES=${MODES:-all}
TARGETS=${TARGETS:-bridge,always,default}
EXTRA=${EXTRA:-}
SLOWSYNC_US=${SLOWSYNC_US:-}
OUT=${OUT:-$(mktemp -d /tmp/queen-jsconsume-XXXXXX)}
. cmd/queen-bench/clusters.sh
build_tools

# median TARGET MODE KEY: the median over the rounds of KEY in the result
# lines of TARGET MODE, or n/a.
median() {
	cat "$OUT"/round-*/jsconsume.txt 2>/dev/null | grep "^result target=$1 mode=$2 " | tr ' ' '\n' | sed -n "s|^$3=||p" |
		grep -v '^n/a$' | sort -g |
		awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

port=$((PORT_BASE + 600))
exec > >(tee "$OUT/summary.txt")
flush="as the disk does it"
[ -n "$SLOWSYNC_US" ] && flush="at least $SLOWSYNC_US µs (slowsync.so)"
echo "compare-jsconsume: $ROUNDS rounds, $DURATION a mode, modes $MODES on $TARGETS; PostgreSQL's flush: $flush"
for round in $(seq 1 "$ROUNDS"); do
	dir=$OUT/round-$round
	port=$((port + 1))
	bench=(-js-consume "$MODES" -js-targets "$TARGETS" -duration "$DURATION" -clients 16 -js-consumers 16 -partitions 100 -payload 200
		-stream BENCH -subject bench.js -pace 0.25 -lone-rate 100 -run "r$round" $EXTRA)
	if [[ ",$TARGETS," == *,bridge,* ]]; then
		cluster "$dir" "$port" "${slow[@]}"
		dsn="postgres://bench@127.0.0.1:$port/bench?sslmode=disable"
		QUEEN_PG_DSN=$dsn QUEEN_DATA_DIR=$dir/bridge QUEEN_NATS_LISTEN=127.0.0.1:4397 QUEEN_HTTP_ADDR=127.0.0.1:6697 \
			QUEEN_JETSTREAM='BENCH=bench.js.>' "$OUT/bin/queen-bridge" 2>"$dir/bridge.log" &
		bridge=$!
		pids+=("$bridge")
		for _ in $(seq 150); do grep -q "queen-bridge ready" "$dir/bridge.log" && break; sleep 0.2; done
		grep -q "queen-bridge ready" "$dir/bridge.log" || { tail -20 "$dir/bridge.log"; exit 1; }
		bench+=(-nats nats://127.0.0.1:4397 -http 127.0.0.1:6697 -pg-dsn "$dsn")
	else
		mkdir -p "$dir"
	fi
	"$OUT/bin/queen-bench" "${bench[@]}" >"$dir/jsconsume.txt" 2>&1 ||
		echo "round $round: $(tail -1 "$dir/jsconsume.txt")"
	if [[ ",$TARGETS," == *,bridge,* ]]; then
		kill -TERM "$bridge" && wait "$bridge" || true
		stop_cluster "$dir"
	fi
	echo "== round $round"
	sed -n '/^target  *mode /,/^cpu a message/p' "$dir/jsconsume.txt"
done

echo
echo "== medians of $ROUNDS rounds"
printf '%-8s %-6s %10s %11s %9s %9s %9s   %s\n' target mode pushed/s consumed/s "p50 ms" "p90 ms" "p99 ms" "cpu µs/msg server / pg / client"
for target in ${TARGETS//,/ }; do
	for mode in push drain both paced lone; do
		[ "$(median "$target" "$mode" pushed_s)" = n/a ] && continue
		printf '%-8s %-6s %10s %11s %9s %9s %9s   %s / %s / %s\n' "$target" "$mode" "$(median "$target" "$mode" pushed_s)" \
			"$(median "$target" "$mode" consumed_s)" "$(median "$target" "$mode" p50_ms)" "$(median "$target" "$mode" p90_ms)" \
			"$(median "$target" "$mode" p99_ms)" "$(median "$target" "$mode" srv_us)" "$(median "$target" "$mode" pg_us)" \
			"$(median "$target" "$mode" client_us)"
	done
done
echo "cpu a message: push per pushed; drain per consumed; both, paced, lone per pushed + consumed. paced: a quarter of push's msgs/s"
echo
echo "ratios (medians of each round's):"
for target in ${TARGETS//,/ }; do
	echo "  $target: drain CPU a consumed ÷ a pushed message: server $(median "$target" drain srv_ratio), postgres" \
		"$(median "$target" drain pg_ratio); drain msgs/s ÷ always's $(median "$target" drain vs_always);" \
		"both ÷ push msgs/s: pushed $(median "$target" both pushed_vs_push), consumed $(median "$target" both consumed_vs_push)"
done
echo "reports and logs: $OUT"
