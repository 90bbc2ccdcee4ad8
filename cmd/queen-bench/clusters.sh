# clusters.sh: sourced by the compare-*.sh scripts. Private PostgreSQL
# clusters with the embedded settings (embedded.DefaultSettings), and the
# clean-up of everything a script started. Set PGBIN before sourcing to
# choose the server binaries; add background pids to pids.

PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}

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
		checkpoint_timeout = 15min
		jit = off
		track_functions = pl
	CONF
	as_pg "$@" "$PGBIN/pg_ctl" -D "$dir/pg" -l "$dir/pg.log" -o "-p $port" -w -t 60 start >/dev/null
	clusters+=("$dir/pg")
	"$PGBIN/psql" -X -q -h 127.0.0.1 -p "$port" -U bench -d postgres -c "CREATE DATABASE bench"
}
