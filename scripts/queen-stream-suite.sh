#!/usr/bin/env bash
# queen-stream-suite.sh: runs Queen's own stream suite, the tests of the Streams
# SDK of Queen's JavaScript client, against the bridge, and reports each test's
# pass or fail (docs/streams.md, "Queen's stream suite"). Not part of go test:
# it needs node and Queen's client, which the Go tests do not.
#
#   QUEEN_CLIENT_JS=~/src/queen/clients/client-js scripts/queen-stream-suite.sh
#
# Knobs (environment):
#   QUEEN_CLIENT_JS (required) Queen's JavaScript client directory, clients/client-js of a
#                   checkout of Queen's repository: client-v2/ (the client and its Streams
#                   SDK) and test-v2/stream/ (the suite). Copied to OUT, never changed.
#   QUEEN_URL       a running server to test. Without it the script builds this tree's
#                   bridge and starts it on its embedded defaults (its own NATS and
#                   PostgreSQL in a fresh data directory under OUT, free ports), and
#                   stops it at the end; other QUEEN_* settings of the environment apply.
#   ONLY            comma list of test names (default: every test)
#   REPEAT          runs of each test (default 1)
#   TEST_TIMEOUT_S  a test still running after this many seconds fails (default 120)
#   TRACE           a file for every HTTP request the client and the SDK make, with the
#                   answer, one JSON object a line
#   OUT             work directory (default: a new temporary directory): the copy of the
#                   client, its node_modules, the bridge's data and log
# Needs node (20 or later) and npm: the client's dependencies (axios, pg, uuid) come from
# the npm registry. Exit status: 0 when every test passed, 1 when one failed, 2 when the
# suite could not run.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

die() { echo "queen-stream-suite: $*" >&2; exit 2; }

[ -n "${QUEEN_CLIENT_JS:-}" ] || die "QUEEN_CLIENT_JS is not set: the clients/client-js directory of a checkout of Queen's repository"
src=$(cd "$QUEEN_CLIENT_JS" 2>/dev/null && pwd) || die "QUEEN_CLIENT_JS=$QUEEN_CLIENT_JS is not a directory"
[ -f "$src/client-v2/index.js" ] || die "$src has no client-v2/index.js (Queen's JavaScript client)"
[ -d "$src/client-v2/streams" ] || die "$src/client-v2 has no streams/ (a client without the Streams SDK)"
[ -d "$src/test-v2/stream" ] || die "$src has no test-v2/stream/ (Queen's stream suite)"
command -v node >/dev/null || die "node is not installed"
command -v npm >/dev/null || die "npm is not installed"
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' ||
	die "node $(node --version) is too old: the client needs 20 or later"

OUT=${OUT:-$(mktemp -d /tmp/queen-stream-suite-XXXXXX)}
mkdir -p "$OUT/test-v2"
OUT=$(cd "$OUT" && pwd)
echo "queen-stream-suite: work directory $OUT"

# The client as Queen ships it, its licence beside it; the suite imports the
# client by the relative path ../../client-v2, so the layout is kept.
rm -rf "$OUT/client-v2" "$OUT/test-v2/stream"
cp -R "$src/client-v2" "$OUT/client-v2"
cp -R "$src/test-v2/stream" "$OUT/test-v2/stream"
for f in LICENSE LICENSE.md package.json; do
	if [ -f "$src/$f" ]; then cp "$src/$f" "$OUT/$f"; fi
done
[ -f "$OUT/package.json" ] || echo '{"type":"module","dependencies":{"axios":"^1.12.2","pg":"^8.16.3","uuid":"^13.0.0"}}' >"$OUT/package.json"
cp "$repo/scripts/queen-stream-suite.mjs" "$OUT/queen-stream-suite.mjs"
(cd "$OUT" && npm install --no-audit --no-fund --omit=dev --ignore-scripts --loglevel=error >/dev/null) ||
	die "npm install failed in $OUT"

bridge_pid=
stop_bridge() {
	[ -n "$bridge_pid" ] || return 0
	kill -TERM "$bridge_pid" 2>/dev/null || true
	wait "$bridge_pid" 2>/dev/null || true
	bridge_pid=
}
trap stop_bridge EXIT

if [ -z "${QUEEN_URL:-}" ]; then
	command -v curl >/dev/null || die "curl is not installed (it asks the bridge's /health)"
	echo "queen-stream-suite: building the bridge"
	go build -o "$OUT/queen-bridge" ./cmd/queen-bridge
	port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close() })')
	QUEEN_DATA_DIR="$OUT/data" QUEEN_HTTP_ADDR="127.0.0.1:$port" QUEEN_NATS_LISTEN=127.0.0.1:-1 \
		"$OUT/queen-bridge" >"$OUT/bridge.log" 2>&1 &
	bridge_pid=$!
	QUEEN_URL="http://127.0.0.1:$port"
	for _ in $(seq 1 240); do
		curl -sf "$QUEEN_URL/health" >/dev/null 2>&1 && break
		kill -0 "$bridge_pid" 2>/dev/null || { tail -5 "$OUT/bridge.log" >&2; die "the bridge stopped at start-up (log: $OUT/bridge.log)"; }
		sleep 0.5
	done
	curl -sf "$QUEEN_URL/health" >/dev/null 2>&1 || die "the bridge is not healthy after 2 minutes (log: $OUT/bridge.log)"
	echo "queen-stream-suite: bridge at $QUEEN_URL, log $OUT/bridge.log"
fi

status=0
QUEEN_URL="$QUEEN_URL" node "$OUT/queen-stream-suite.mjs" "$OUT" || status=$?
exit "$status"
