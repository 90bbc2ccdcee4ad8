# clusters.sh: sourced by the compare-*.sh scripts. Private PostgreSQL
# clusters with the embedded settings (embedded.DefaultSettings), the
# binaries a script measures, and the clean-up of everything a script
# started (a round's cluster files too, unless KEEP_DATA=1). Set PGBIN
# before sourcing to choose the server binaries; add background pids to
# pids.

PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}

# PORT_BASE: the scripts' clusters listen a few hundred ports above it. It
# lies below Linux's ephemeral range (32768-60999 by default), where a
# port may be held by a connection of an earlier round (bind: "Address
# already in use") however free it looked when the script began.
PORT_BASE=${PORT_BASE:-26000}

# as_pg runs a command as postgres when we are root (initdb refuses root).
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

pids=()
clusters=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	# Only these: a bare wait would also wait for a tee of the script's
	# output, which ends only when the script does.
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	for c in "${clusters[@]}"; do as_pg "$PGBIN/pg_ctl" -D "$c" -m fast -w stop >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

# cluster DIR PORT [WRAPPER...]: initdb under DIR/pg with the embedded
# settings, start it on 127.0.0.1:PORT (pg_ctl run under WRAPPER, e.g.
# taskset or env LD_PRELOAD=...), and create the database bench.
cluster() {
	local dir=$1 port=$2
	shift 2
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
		wal_init_zero = off
		checkpoint_timeout = 15min
		jit = off
		track_functions = pl
	CONF
	as_pg "$@" "$PGBIN/pg_ctl" -D "$dir/pg" -l "$dir/pg.log" -o "-p $port" -w -t 60 start >/dev/null
	clusters+=("$dir/pg")
	"$PGBIN/psql" -X -q -h 127.0.0.1 -p "$port" -U bench -d postgres -c "CREATE DATABASE bench"
}

# stop_cluster DIR: stop the cluster cluster() made under DIR and delete
# its data files, which a round leaves at several hundred MB (its pg.log
# stays); KEEP_DATA=1 keeps them to look into.
stop_cluster() {
	as_pg "$PGBIN/pg_ctl" -D "$1/pg" -m fast -w stop >/dev/null
	[ -n "${KEEP_DATA:-}" ] || rm -rf "$1/pg"
}

# build_tools: queen-bridge (a copy of BRIDGE_BIN when set, else this
# tree's) and queen-bench into $OUT/bin; with SLOWSYNC_US set, slowsync.so
# there too and slow=(the wrapper that runs PostgreSQL under it: every
# fsync and fdatasync at least SLOWSYNC_US µs), else slow=().
build_tools() {
	mkdir -p "$OUT/bin" && chmod 755 "$OUT" # the cluster runs as postgres when we are root
	if [ -n "${BRIDGE_BIN:-}" ]; then cp "$BRIDGE_BIN" "$OUT/bin/queen-bridge"; else go build -o "$OUT/bin/queen-bridge" ./cmd/queen-bridge; fi
	go build -o "$OUT/bin/queen-bench" ./cmd/queen-bench
	slow=()
	if [ -n "${SLOWSYNC_US:-}" ]; then
		cc -O2 -shared -fPIC -o "$OUT/bin/slowsync.so" cmd/queen-bench/slowsync/slowsync.c -ldl
		chmod 755 "$OUT/bin" "$OUT/bin/slowsync.so"
		slow=(env LD_PRELOAD="$OUT/bin/slowsync.so" SLOWSYNC_US="$SLOWSYNC_US")
	fi
}
