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
#   OUT       a new temporary directory: every report, log and table
#
#   cmd/queen-bench/compare-models.sh        # from the repository root
set -euo pipefail
MODELS=${MODELS:-plain slow pinned}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
LOAD=${LOAD:--clients 64 -items 1 -partitions 1000}
OUT=${OUT:-$(mktemp -d /tmp/queen-models-XXXXXX)}
PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
mkdir -p "$OUT/bin" && chmod 755 "$OUT" # the cluster runs as postgres when we are root
go build -o "$OUT/bin/queen-bridge" ./cmd/queen-bridge
go build -o "$OUT/bin/queen-bench" ./cmd/queen-bench
cc -O2 -shared -fPIC -o "$OUT/bin/slowsync.so" cmd/queen-bench/slowsync/slowsync.c -ldl
chmod 755 "$OUT/bin" "$OUT/bin/slowsync.so"

as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
pids=()
clusters=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	for c in "${clusters[@]}"; do as_pg "$PGBIN/pg_ctl" -D "$c" -m fast -w stop >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

# cluster DIR PORT MODEL: initdb with the embedded settings (embedded.DefaultSettings), start.
cluster() {
	local dir=$1 port=$2 model=$3 pre=() pin=()
	mkdir -p "$dir" && chmod 755 "$dir"
	[ "$(id -u)" = 0 ] && chown postgres "$dir"
	as_pg "$PGBIN/initdb" -D "$dir/pg" -U bench --auth=trust -E UTF8 --locale=C >/dev/null
	cat >>"$dir/pg/postgresql.conf" <<-CONF
		listen_addresses = '127.0.0.1'
		unix_socket_directories = ''
		max_connections = 300
		shared_buffers = 256MB
		max_wal_size = 4GB
		min_wal_size = 256MB
		checkpoint_timeout = 15min
		jit = off
		track_functions = pl
	CONF
	case $model in slow | slowpinned) pre=(env LD_PRELOAD="$OUT/bin/slowsync.so" SLOWSYNC_US="${SLOWSYNC_US:-1000}") ;; esac
	case $model in pinned | slowpinned) pin=(taskset -c 0) ;; esac
	as_pg "${pin[@]}" "${pre[@]}" "$PGBIN/pg_ctl" -D "$dir/pg" -l "$dir/pg.log" -o "-p $port" -w -t 60 start >/dev/null
	clusters+=("$dir/pg")
	"$PGBIN/psql" -X -q -h 127.0.0.1 -p "$port" -U bench -d postgres -c "CREATE DATABASE bench"
}

port=56400
exec > >(tee "$OUT/tables.txt")
for model in $MODELS; do
	side=()
	case $model in pinned | slowpinned) side=(taskset -c 1) ;; esac
	for round in $(seq 1 "$ROUNDS"); do
		dir=$OUT/$model-$round
		port=$((port + 1))
		cluster "$dir" "$port" "$model"
		dsn="postgres://bench@127.0.0.1:$port/bench?sslmode=disable"
		QUEEN_PG_DSN=$dsn QUEEN_DATA_DIR=$dir/bridge QUEEN_NATS_LISTEN=127.0.0.1:4395 QUEEN_HTTP_ADDR=127.0.0.1:6695 \
			"${side[@]}" "$OUT/bin/queen-bridge" 2>"$dir/bridge.log" &
		bridge=$!
		pids+=("$bridge")
		for _ in $(seq 150); do grep -q "queen-bridge ready" "$dir/bridge.log" && break; sleep 0.2; done
		# shellcheck disable=SC2086 # LOAD is a list of flags
		"${side[@]}" "$OUT/bin/queen-bench" -compare -pg-dsn "$dsn" -nats nats://127.0.0.1:4395 -http 127.0.0.1:6695 \
			-duration "$DURATION" $LOAD >"$dir/report.txt" 2>&1
		kill -TERM "$bridge" && wait "$bridge" || true
		as_pg "$PGBIN/pg_ctl" -D "$dir/pg" -m fast -w stop >/dev/null
		echo "== $model, round $round"
		sed -n '/^compare:/,$p' "$dir/report.txt"
	done
done
echo "reports and logs: $OUT"
