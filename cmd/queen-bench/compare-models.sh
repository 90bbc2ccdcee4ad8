#!/usr/bin/env bash
# queen-bench -compare under the deployment models of docs/benchmarks.md.
# Each round starts a private PostgreSQL cluster with the embedded settings,
# a queen-bridge on it (its embedded NATS), and queen-bench -compare (the
# bridge, then the baselines written straight into the same cluster), then
# stops them all.
#
#   MODELS    plain slow pinned     which models, any of:
#               plain   the machine as it is
#               slow    every fsync of PostgreSQL takes at least SLOWSYNC_US
#                       (1000) µs (slowsync.c): cloud block storage
#               pinned  PostgreSQL alone on CPU 0, the bridge and queen-bench
#                       on CPU 1: PostgreSQL on a host of its own
#               slowpinned  both
#   ROUNDS    3                     rounds per model
#   DURATION  10s                   per target
#   LOAD      "-clients 64 -items 1 -partitions 1000"   queen-bench flags
#   WARM      0s                    push LOAD to the bridge this long first, not
#                                   reported: a partition's first push provisions
#                                   it, which a slow load (one client) would
#                                   otherwise measure for much of its run
#   OUT       a new temporary directory: every report, log and table
#             (a round's cluster files are deleted: KEEP_DATA=1 keeps them)
#
#   cmd/queen-bench/compare-models.sh        # from the repository root
set -euo pipefail
MODELS=${MODELS:-plain slow pinned}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
WARM=${WARM:-0s}
LOAD=${LOAD:--clients 64 -items 1 -partitions 1000}
OUT=${OUT:-$(mktemp -d /tmp/queen-models-XXXXXX)}
mkdir -p "$OUT/bin" && chmod 755 "$OUT" # the cluster runs as postgres when we are root
go build -o "$OUT/bin/queen-bridge" ./cmd/queen-bridge
go build -o "$OUT/bin/queen-bench" ./cmd/queen-bench
cc -O2 -shared -fPIC -o "$OUT/bin/slowsync.so" cmd/queen-bench/slowsync/slowsync.c -ldl
chmod 755 "$OUT/bin" "$OUT/bin/slowsync.so"

. cmd/queen-bench/clusters.sh

# model_cluster DIR PORT MODEL: a cluster under the model's wrappers.
model_cluster() {
	local pre=() pin=()
	case $3 in slow | slowpinned) pre=(env LD_PRELOAD="$OUT/bin/slowsync.so" SLOWSYNC_US="${SLOWSYNC_US:-1000}") ;; esac
	case $3 in pinned | slowpinned) pin=(taskset -c 0) ;; esac
	cluster "$1" "$2" "${pin[@]}" "${pre[@]}"
}

port=$((PORT_BASE + 400))
exec > >(tee "$OUT/tables.txt")
for model in $MODELS; do
	side=()
	case $model in pinned | slowpinned) side=(taskset -c 1) ;; esac
	for round in $(seq 1 "$ROUNDS"); do
		dir=$OUT/$model-$round
		port=$((port + 1))
		model_cluster "$dir" "$port" "$model"
		dsn="postgres://bench@127.0.0.1:$port/bench?sslmode=disable"
		QUEEN_PG_DSN=$dsn QUEEN_DATA_DIR=$dir/bridge QUEEN_NATS_LISTEN=127.0.0.1:4395 QUEEN_HTTP_ADDR=127.0.0.1:6695 \
			"${side[@]}" "$OUT/bin/queen-bridge" 2>"$dir/bridge.log" &
		bridge=$!
		pids+=("$bridge")
		for _ in $(seq 150); do grep -q "queen-bridge ready" "$dir/bridge.log" && break; sleep 0.2; done
		if [ "$WARM" != 0s ]; then
			# shellcheck disable=SC2086 # LOAD is a list of flags
			"${side[@]}" "$OUT/bin/queen-bench" -pg-dsn "$dsn" -nats nats://127.0.0.1:4395 -http 127.0.0.1:6695 \
				-duration "$WARM" -run "warm$round" $LOAD >"$dir/warm.txt" 2>&1
		fi
		# shellcheck disable=SC2086 # LOAD is a list of flags
		"${side[@]}" "$OUT/bin/queen-bench" -compare -pg-dsn "$dsn" -nats nats://127.0.0.1:4395 -http 127.0.0.1:6695 \
			-duration "$DURATION" $LOAD >"$dir/report.txt" 2>&1
		kill -TERM "$bridge" && wait "$bridge" || true
		stop_cluster "$dir"
		echo "== $model, round $round"
		sed -n '/^compare:/,$p' "$dir/report.txt"
	done
done
echo "reports and logs: $OUT"
