#!/usr/bin/env bash
# One bridge, then two on the same NATS and PostgreSQL, each loaded through
# the shared push subject (the second bridge forwards what it does not own)
# and partition-aware (queen-bench -aware: each item to its owner's own
# subject). Each round starts a private PostgreSQL cluster with the
# embedded settings, bridge A with its embedded NATS on it, runs
#   1 bridge: plain, aware     (alternating which goes first per round)
#   bridge B joins A's NATS and database
#   2 bridges: plain, aware
# and stops them all. The CPU per item of the bridges is A's and B's
# process_cpu_seconds_total together (A's includes the NATS server).
#
#   NATS      embedded     embedded: bridge A's NATS server, which B reaches over TCP while
#                          A's own connection is in-process; separate: a NATS server of its
#                          own (queen-bench -serve-jetstream), both bridges over TCP, its CPU
#                          reported apart ("jetstream server")
#   ROUNDS    1            rounds
#   FIRST     1            number of the first round (its parity sets the order)
#   DURATION  15s          per run (each after a 3 s warm-up, not counted)
#   LOAD      "-clients 64 -items 1 -partitions 1000"
#   OUT       a new temporary directory: every report and log
#             (a round's cluster files are deleted: KEEP_DATA=1 keeps them)
#
#   cmd/queen-bench/compare-owners.sh        # from the repository root
set -euo pipefail
ROUNDS=${ROUNDS:-1}
FIRST=${FIRST:-1}
DURATION=${DURATION:-15s}
LOAD=${LOAD:--clients 64 -items 1 -partitions 1000}
OUT=${OUT:-$(mktemp -d /tmp/queen-owners-XXXXXX)}
NATS=${NATS:-embedded}
NATSA=127.0.0.1:4396
HTTPA=127.0.0.1:6696
HTTPB=127.0.0.1:6697
mkdir -p "$OUT/bin" && chmod 755 "$OUT"
[ -x "$OUT/bin/queen-bridge" ] || go build -o "$OUT/bin/queen-bridge" ./cmd/queen-bridge
[ -x "$OUT/bin/queen-bench" ] || go build -o "$OUT/bin/queen-bench" ./cmd/queen-bench

. cmd/queen-bench/clusters.sh

ready() { for _ in $(seq 150); do grep -q "queen-bridge ready" "$1" && return 0; sleep 0.2; done; return 1; }
bridges() { curl -s "http://$1/metrics/prometheus" | awk '$1 == "queen_ownership_bridges" {print $2}'; }

# bench NAME METRICS FLAGS...: a 3 s warm-up, then the measured run.
bench() {
	local name=$1 metrics=$2
	shift 2
	# shellcheck disable=SC2086 # LOAD is a list of flags
	"$OUT/bin/queen-bench" -pg-dsn "$dsn" -nats "nats://$NATSA" -http "$HTTPA" -metrics "$metrics" -duration 3s "${server[@]}" \
		-run "w$round$name" $LOAD "$@" >"$dir/$name-warmup.txt" 2>&1
	# shellcheck disable=SC2086
	"$OUT/bin/queen-bench" -pg-dsn "$dsn" -nats "nats://$NATSA" -http "$HTTPA" -metrics "$metrics" -duration "$DURATION" "${server[@]}" \
		-run "r$round$name" $LOAD "$@" >"$dir/$name.txt" 2>&1
	echo "== round $round, $name"
	grep -E '^(items|latency|cpu/item|fusion|bridges|forwards) ' "$dir/$name.txt"
}

port=$((PORT_BASE + 500))
for round in $(seq "$FIRST" $((FIRST + ROUNDS - 1))); do
	dir=$OUT/round-$round
	port=$((port + round))
	cluster "$dir" "$port"
	dsn="postgres://bench@127.0.0.1:$port/bench?sslmode=disable"
	server=()
	natsenv=(QUEEN_NATS_LISTEN=$NATSA)
	if [ "$NATS" = separate ]; then
		"$OUT/bin/queen-bench" -serve-jetstream "$dir/nats" -listen "$NATSA" >"$dir/nats.log" 2>&1 &
		ns=$!
		pids+=("$ns")
		for _ in $(seq 50); do grep -q "^jetstream" "$dir/nats.log" && break; sleep 0.1; done
		server=(-server-pid "$ns")
		natsenv=(QUEEN_NATS_URL=nats://$NATSA)
	fi
	env QUEEN_PG_DSN="$dsn" QUEEN_DATA_DIR="$dir/a" "${natsenv[@]}" QUEEN_HTTP_ADDR=$HTTPA \
		"$OUT/bin/queen-bridge" 2>"$dir/a.log" &
	a=$!
	pids+=("$a")
	ready "$dir/a.log"
	one="http://$HTTPA/metrics/prometheus"
	two="$one,http://$HTTPB/metrics/prometheus"
	if [ $((round % 2)) = 1 ]; then order=(plain aware); else order=(aware plain); fi
	for mode in "${order[@]}"; do
		if [ "$mode" = aware ]; then bench "1-$mode" "$one" -aware; else bench "1-$mode" "$one"; fi
	done
	QUEEN_PG_DSN=$dsn QUEEN_DATA_DIR=$dir/b QUEEN_NATS_URL=nats://$NATSA QUEEN_HTTP_ADDR=$HTTPB \
		"$OUT/bin/queen-bridge" 2>"$dir/b.log" &
	b=$!
	pids+=("$b")
	ready "$dir/b.log"
	for _ in $(seq 100); do [ "$(bridges "$HTTPA")" = 2 ] && [ "$(bridges "$HTTPB")" = 2 ] && break; sleep 0.1; done
	for mode in "${order[@]}"; do
		if [ "$mode" = aware ]; then bench "2-$mode" "$two" -aware; else bench "2-$mode" "$two"; fi
	done
	kill -TERM "$b" && wait "$b" || true
	kill -TERM "$a" && wait "$a" || true
	if [ "$NATS" = separate ]; then kill -INT "$ns" && wait "$ns" || true; fi
	stop_cluster "$dir"
done
echo "reports and logs: $OUT"
