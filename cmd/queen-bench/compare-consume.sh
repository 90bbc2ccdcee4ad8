#!/usr/bin/env bash
# compare-consume.sh: what consuming costs beside pushing, at the same
# batch size, each round on a fresh cluster with the embedded settings and
# a fresh bridge (docs/consumers.md, "What consuming costs"):
#   1. push:    -clients 16 -items 100 over 100 partitions (CPU per pushed item);
#               it leaves a backlog for
#   2. consume: 16 consumers, batch 100, batch acknowledgement, nothing pushed
#               (CPU per consumed item);
#   3. both:    the push load and the consumers at once, on queues of their own
#               (consumed items/s, lag every second, push-to-delivery p50/p99).
# Run it under /work/coord/measure (or any exclusive lock) on a quiet machine.
set -euo pipefail
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
TRANSPORT=${TRANSPORT:-nats}
OUT=${OUT:-$(mktemp -d /tmp/queen-consume-XXXXXX)}
mkdir -p "$OUT/bin" && chmod 755 "$OUT"
go build -o "$OUT/bin/queen-bridge" ./cmd/queen-bridge
go build -o "$OUT/bin/queen-bench" ./cmd/queen-bench

. cmd/queen-bench/clusters.sh

port=56500
exec > >(tee "$OUT/summary.txt")
for round in $(seq 1 "$ROUNDS"); do
	dir=$OUT/round-$round
	port=$((port + 1))
	cluster "$dir" "$port"
	dsn="postgres://bench@127.0.0.1:$port/bench?sslmode=disable"
	QUEEN_PG_DSN=$dsn QUEEN_DATA_DIR=$dir/bridge QUEEN_NATS_LISTEN=127.0.0.1:4396 QUEEN_HTTP_ADDR=127.0.0.1:6696 \
		"$OUT/bin/queen-bridge" 2>"$dir/bridge.log" &
	bridge=$!
	pids+=("$bridge")
	for _ in $(seq 150); do grep -q "queen-bridge ready" "$dir/bridge.log" && break; sleep 0.2; done
	common=(-pg-dsn "$dsn" -nats nats://127.0.0.1:4396 -http 127.0.0.1:6696 -transport "$TRANSPORT" -duration "$DURATION" -partitions 100)
	"$OUT/bin/queen-bench" "${common[@]}" -clients 16 -items 100 >"$dir/push.txt" 2>&1
	"$OUT/bin/queen-bench" "${common[@]}" -consumers 16 -consume-batch 100 -consume-only >"$dir/consume.txt" 2>&1
	"$OUT/bin/queen-bench" "${common[@]}" -clients 16 -items 100 -consumers 16 -consume-batch 100 \
		-queue-prefix live.q -consume-group live >"$dir/both.txt" 2>&1
	kill -TERM "$bridge" && wait "$bridge" || true
	as_pg "$PGBIN/pg_ctl" -D "$dir/pg" -m fast -w stop >/dev/null
	echo "== round $round"
	echo "push:    $(grep '^items' "$dir/push.txt")  $(grep '^cpu/item' "$dir/push.txt")"
	echo "consume: $(grep '^consumed' "$dir/consume.txt")  $(grep '^cpu/item' "$dir/consume.txt")"
	echo "both:    $(grep -E '^(pushed|consumed|lag|delivery)' "$dir/both.txt" | tr '\n' ' ')"
	echo "         $(grep '^cpu/item' "$dir/both.txt")"
done
echo "reports and logs: $OUT"
