#!/usr/bin/env bash
# compare-consume.sh: what consuming costs beside pushing, at the same
# batch size, each round on a fresh cluster with the embedded settings and
# a fresh bridge (docs/consumers.md, "What consuming costs"):
#   1. push:    -clients 16 -items 100 over 100 partitions (CPU per pushed item);
#               it leaves a backlog on bench.q0 for
#   2. consume: 16 consumers, batch 100, batch acknowledgement, nothing pushed
#               (CPU per consumed item);
#   3. both:    the push load and the consumers at once, on queues of their own
#               (consumed items/s, lag every second, push-to-delivery p50/p99);
#   4. half:    the push side open loop (-rate) at half the items/s round 1
#               measured, and the consumers, on queues of their own:
#               push-to-delivery p50/p99 from the scheduled send times;
#   5. groups4: 4 fresh groups of 4 consumers (16 in all, as in 2) drain the
#               backlog of round 1 at once, each group all of it from its
#               start (-groups 4 -consume-only): CPU per delivery.
# The summary has one block per round, every figure and ratio from that
# round. Knobs (environment):
#   ROUNDS      3       rounds
#   DURATION    10s     per load
#   TRANSPORT   nats    nats or http
#   SLOWSYNC_US (empty) when set, PostgreSQL runs under slowsync.so (as in
#               compare-models.sh's slow model): every fsync and fdatasync
#               lasts at least this many µs, e.g. 1000 for a 1 ms flush
#   OUT         a new temporary directory: every report, log and the summary
#               (a round's cluster files are deleted: KEEP_DATA=1 keeps them)
#   BRIDGE_BIN  (empty) a queen-bridge binary to measure instead of building
#               this tree's (an earlier version's, for a before/after with the
#               same load generator)
# Run it alone on a quiet machine: nothing else building or measuring.
set -euo pipefail
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
TRANSPORT=${TRANSPORT:-nats}
SLOWSYNC_US=${SLOWSYNC_US:-}
OUT=${OUT:-$(mktemp -d /tmp/queen-consume-XXXXXX)}
. cmd/queen-bench/clusters.sh
build_tools

# rate FILE KEY: the items/s of the report's line KEY ("items", "pushed", "consumed").
rate() { sed -n "s|^$2 *[0-9]* (\([0-9]*\)/s).*|\1|p" "$1" | head -1; }
# cpu FILE KEY: bridge, PostgreSQL and queen-bench µs of the report's line KEY.
cpu() { sed -n "s|^$2.*bridge \([^ ]*\) µs, postgres \([^ ]*\) µs, queen-bench \([^ ]*\) µs.*|\1 \2 \3|p" "$1" | head -1; }
# cpus "B P Q": as the summary shows them.
cpus() { local a=($1); echo "${a[0]:-n/a} / ${a[1]:-n/a} / ${a[2]:-n/a} µs"; }
# field N "B P Q": the Nth of them.
field() { local a=($2); echo "${a[$1 - 1]:-n/a}"; }
# delivery FILE: push-to-delivery p50, p99 and max.
# tailhits FILE: the share of pops the bridge's hot tail served ("n/a" from an older bridge).
tailhits() { sed -n 's|^tail  *[0-9]* pops served from the bridges. hot tails (\([0-9]*%\) of [0-9]*).*|\1|p' "$1" | grep . || echo n/a; }
delivery() { sed -n 's|^delivery .*p50 \([^ ]*\)  p99 \([^ ]*\)  max \([^ ]*\) .*|p50 \1  p99 \2  max \3|p' "$1"; }
# ratio A B: A ÷ B, or n/a.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b + 0 > 0) printf "%.2f", a / b; else printf "n/a" }'
}

port=$((PORT_BASE + 500))
exec > >(tee "$OUT/summary.txt")
flush="as the disk does it"
[ -n "$SLOWSYNC_US" ] && flush="at least $SLOWSYNC_US µs (slowsync.so)"
echo "compare-consume: $ROUNDS rounds of $DURATION over $TRANSPORT; PostgreSQL's flush: $flush"
for round in $(seq 1 "$ROUNDS"); do
	dir=$OUT/round-$round
	port=$((port + 1))
	cluster "$dir" "$port" "${slow[@]}"
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
	pushrate=$(rate "$dir/push.txt" items)
	half=$(awk -v r="${pushrate:-0}" 'BEGIN { printf "%d", r / 2 }')
	if [ "$half" -gt 0 ]; then
		"$OUT/bin/queen-bench" "${common[@]}" -clients 16 -items 100 -rate "$half" -consumers 16 -consume-batch 100 \
			-queue-prefix half.q -consume-group half >"$dir/half.txt" 2>&1
	else
		echo "no push-only items/s to halve" >"$dir/half.txt"
	fi
	"$OUT/bin/queen-bench" "${common[@]}" -consumers 4 -groups 4 -consume-batch 100 -consume-only -consume-group fan \
		>"$dir/groups4.txt" 2>&1
	kill -TERM "$bridge" && wait "$bridge" || true
	stop_cluster "$dir"

	pushcpu=$(cpu "$dir/push.txt" cpu/item)
	consrate=$(rate "$dir/consume.txt" consumed)
	conscpu=$(cpu "$dir/consume.txt" cpu/item)
	bothpushed=$(rate "$dir/both.txt" pushed)
	bothconsumed=$(rate "$dir/both.txt" consumed)
	fancpu=$(cpu "$dir/groups4.txt" cpu/deliv)
	echo "== round $round"
	echo "push:     ${pushrate:-n/a} items/s  cpu/item bridge/pg/bench $(cpus "$pushcpu")"
	echo "consume:  ${consrate:-n/a} items/s  cpu/item bridge/pg/bench $(cpus "$conscpu")"
	echo "both:     pushed ${bothpushed:-n/a}/s  consumed ${bothconsumed:-n/a}/s  cpu/item (pushed + consumed) bridge/pg/bench" \
		"$(cpus "$(cpu "$dir/both.txt" cpu/item)")"
	echo "          $(grep '^lag' "$dir/both.txt" | sed 's/^lag *//')  delivery $(delivery "$dir/both.txt")"
	echo "half:     -rate $half: pushed $(rate "$dir/half.txt" pushed)/s  consumed $(rate "$dir/half.txt" consumed)/s" \
		" late $(sed -n 's/^late *\([0-9]* of [0-9]*\) .*/\1/p' "$dir/half.txt")  delivery $(delivery "$dir/half.txt")"
	echo "groups4:  $(rate "$dir/groups4.txt" consumed) deliveries/s  cpu/delivery bridge/pg/bench $(cpus "$fancpu")"
	echo "tail:     pops served from memory: consume $(tailhits "$dir/consume.txt"), both $(tailhits "$dir/both.txt"), half $(tailhits "$dir/half.txt"), groups4 $(tailhits "$dir/groups4.txt")"
	echo "ratios:   consume ÷ push: pg cpu/item $(ratio "$(field 2 "$conscpu")" "$(field 2 "$pushcpu")")," \
		"bridge cpu/item $(ratio "$(field 1 "$conscpu")" "$(field 1 "$pushcpu")"), items/s $(ratio "$consrate" "$pushrate");" \
		"both ÷ push-only items/s: pushed $(ratio "$bothpushed" "$pushrate"), consumed $(ratio "$bothconsumed" "$pushrate");" \
		"groups4 pg cpu/delivery ÷ push pg cpu/item $(ratio "$(field 2 "$fancpu")" "$(field 2 "$pushcpu")")"
done
echo "reports and logs: $OUT"
