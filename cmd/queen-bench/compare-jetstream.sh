#!/usr/bin/env bash
# The JetStream comparison of docs/jetstream.md: PublishAsync with 1 and 64
# publishers, 200-byte JSON over 100 subjects, into a queen-bridge
# (embedded PostgreSQL and NATS, QUEEN_JETSTREAM=BENCH=bench.js.>), beside
# the same client into a real JetStream file-storage stream (default sync,
# and sync_interval: always), and a one-item push (64 clients x 1 item over
# NATS) into the same bridge. ROUNDS rounds (3), each on fresh data; every
# run lasts DURATION (10s). Output: one line per run, then the raw reports
# in $OUT (a temporary directory).
#
#   cmd/queen-bench/compare-jetstream.sh            # from the repository root
set -euo pipefail
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
OUT=${OUT:-$(mktemp -d /tmp/queen-jetstream-compare-XXXXXX)}
mkdir -p "$OUT" && chmod 755 "$OUT" # the embedded cluster runs as postgres when we are root
BIN=$OUT/bin
mkdir -p "$BIN"
go build -o "$BIN/queen-bridge" ./cmd/queen-bridge
go build -o "$BIN/queen-bench" ./cmd/queen-bench

# Whatever this script started stops with it, however it ends.
pids=()
trap 'for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done; wait' EXIT

BRIDGE_NATS=127.0.0.1:4390 BRIDGE_HTTP=127.0.0.1:6690 JS_LISTEN=127.0.0.1:4391

# summary FILE LABEL: items/s and CPU per item of a report.
summary() {
	local items cpu
	items=$(sed -n 's/^items .*(\([0-9]*\)\/s).*/\1/p' "$1")
	cpu=$(sed -n 's/^cpu\/item   //p' "$1")
	printf '%-34s %8s items/s   %s\n' "$2" "$items" "$cpu"
}

for round in $(seq 1 "$ROUNDS"); do
	data=$OUT/round$round
	mkdir -p "$data" && chmod 755 "$data"
	QUEEN_DATA_DIR=$data/bridge QUEEN_NATS_LISTEN=$BRIDGE_NATS QUEEN_HTTP_ADDR=$BRIDGE_HTTP \
		QUEEN_JETSTREAM='BENCH=bench.js.>' "$BIN/queen-bridge" 2>"$data/bridge.log" &
	bridge=$!
	pids+=("$bridge")
	for _ in $(seq 1 600); do grep -q 'queen-bridge ready' "$data/bridge.log" && break; sleep 0.1; done
	grep -q 'queen-bridge ready' "$data/bridge.log" || { cat "$data/bridge.log"; exit 1; }
	port=$(sed -n 's/.*"postgres":"embedded 127.0.0.1:\([0-9]*\),.*/\1/p' "$data/bridge.log" | head -1)
	pw=$(sed -n 's/^role_password=//p' "$data/bridge/pg.credentials")
	dsn="postgres://queen_bridge:$pw@127.0.0.1:$port/queen?sslmode=disable"
	metrics="http://$BRIDGE_HTTP/metrics/prometheus"
	for pubs in 1 64; do
		"$BIN/queen-bench" -target jetstream -nats "nats://$BRIDGE_NATS" -stream BENCH -subject bench.js -clients "$pubs" \
			-partitions 100 -duration "$DURATION" -metrics "$metrics" -pg-dsn "$dsn" -run "r$round-b$pubs" >"$data/bridge-js-$pubs.txt"
		summary "$data/bridge-js-$pubs.txt" "round $round bridge jetstream x$pubs"
	done
	"$BIN/queen-bench" -target bridge -transport nats -nats "nats://$BRIDGE_NATS" -http "$BRIDGE_HTTP" -clients 64 -items 1 \
		-partitions 100 -duration "$DURATION" -pg-dsn "$dsn" -run "r$round-push" >"$data/bridge-push-64.txt"
	summary "$data/bridge-push-64.txt" "round $round bridge push 64x1"
	kill -INT "$bridge" && wait "$bridge" || true

	for sync in default always; do
		flag=""
		[ "$sync" = always ] && flag=-sync-always
		"$BIN/queen-bench" -serve-jetstream "$data/js-$sync" -listen "$JS_LISTEN" $flag >"$data/js-$sync.log" &
		server=$!
		pids+=("$server")
		for _ in $(seq 1 100); do grep -q '^jetstream ' "$data/js-$sync.log" && break; sleep 0.1; done
		for pubs in 1 64; do
			"$BIN/queen-bench" -target jetstream -nats "nats://$JS_LISTEN" -stream "BENCH$pubs" -subject "bench$pubs" -create-stream \
				-server-pid "$server" -clients "$pubs" -partitions 100 -duration "$DURATION" -run "r$round-j$pubs" >"$data/js-$sync-$pubs.txt"
			summary "$data/js-$sync-$pubs.txt" "round $round jetstream $sync x$pubs"
		done
		kill -INT "$server" && wait "$server" || true
	done
done
echo "reports in $OUT"
