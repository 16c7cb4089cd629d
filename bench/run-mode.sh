#!/usr/bin/env bash
# Issue 14's `run`-mode goals against nginx serving the demo's catalog answers as static JSON.
#
# nginx (1 worker, bench/nginx.sh) on TARGET_CORE serves the demo's real answers: a 20-item search
# page (2.2 KB) at /catalog/search, and the two items it leads to at /catalog/items/<id>; the
# generator runs on GEN_CORE, 127.0.0.1 only. At each rate of the grid, in turn:
#   - `attack --url`: one fixed GET of an item (the cheapest request the engine sends);
#   - `attack --config`: fixtures/demo-service/catalog.toml's workload (search, item, related:
#     captures and JSON-pointer checks on every step, 100 ms think times), offered at the same
#     number of requests per second (sessions/s = rate / the workload's requests per session).
#     The workload runs on the phase engine `run` uses for its ramp and soak steps.
# A rate HOLDS as in bench/peak.sh: p99 from the intended send time ≤ 10 ms, under 0.1% of the
# offered requests without a correct answer (dropped, failed, or a failed check), exit 0.
# CPU is user+sys of the whole generator process from /usr/bin/time, per offered request; the
# table gives the workload's CPU per request over the single GET's (goal: at most 1.5).
#
# Usage: bench/run-mode.sh [LOADGATE]     (default target/release/cargo-loadgate)
# Env:   RATES="20000 40000 60000 80000 100000" SECONDS_PER_RATE=8 REPS=1
#        GEN_CORE=0 TARGET_CORE=1 PORT=18083
# Loopback only; every run is bounded by its duration and a timeout; nginx is stopped by PID.
set -euo pipefail
cd "$(dirname "$0")/.."
LOADGATE=${1:-target/release/cargo-loadgate}
RATES=${RATES:-"20000 40000 60000 80000 100000"}
dur=${SECONDS_PER_RATE:-8}
REPS=${REPS:-1}
GEN_CORE=${GEN_CORE:-0}
TARGET_CORE=${TARGET_CORE:-1}
PORT=${PORT:-18083}
CONFIG=fixtures/demo-service/catalog.toml
[ -x "$LOADGATE" ] || { echo "$LOADGATE is not an executable (cargo build --release -p cargo-loadgate?)" >&2; exit 1; }
for need in nginx jq /usr/bin/time taskset python3 curl; do
  command -v "$need" > /dev/null || { echo "$need is missing (apt-get install -y nginx jq time util-linux python3 curl)" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/loadgate-run-mode.XXXXXX)
URL="http://127.0.0.1:$PORT/index.txt"
BASE="http://127.0.0.1:$PORT"
# shellcheck source=bench/nginx.sh
. bench/nginx.sh
cleanup() {
  stop_nginx
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The demo's own answers, written as nginx's static files (the query string is not looked at).
mkdir -p "$WORK/www/catalog/items"
python3 - "$WORK/www/catalog" <<'PY'
import json, sys
root = sys.argv[1]
def item(n):
    return {"id": f"sku-{n:05}", "name": f"Product {n} of the catalog", "price_cents": 1000 + n % 50000,
            "stock": n % 300, "fast_shipping": n % 2 == 0}
first = 48843
items = [item(first + 7919 * i) for i in range(20)]
open(f"{root}/search", "w").write(json.dumps(
    {"query": "q5", "page": 1, "total": 1083, "items": items}, separators=(",", ":")))
for n in (first, first + 302):
    body = dict(item(n), related=[f"sku-{n + 302 * k:05}" for k in range(1, 5)])
    open(f"{root}/items/sku-{n:05}", "w").write(json.dumps(body, separators=(",", ":")))
PY
start_nginx
GET_URL="$BASE/catalog/items/sku-48843"
curl -fsS "$BASE/catalog/search?q=q1&page=1" | jq -e '.items[19].price_cents' > /dev/null
curl -fsS "$GET_URL" | jq -e '.related[3]' > /dev/null

# Requests per session of the workload, from its own tally: 1 + 0.8 + 0.8 × 0.6 = 2.28.
PER_SESSION=2.28
echo "# $(date -u +%FT%TZ) $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); ${dur}s a rate, $REPS rep(s); nginx on core $TARGET_CORE, the generator on core $GEN_CORE; $LOADGATE ($("$LOADGATE" loadgate --version 2>/dev/null || echo '?'))"
results=$WORK/results
: > "$results"
for rep in $(seq "$REPS"); do
  for rate in $RATES; do
    for mode in get workload; do
      out=$WORK/out.json
      rm -f "$out"
      code=0
      if [ "$mode" = get ]; then
        args=(--url "$GET_URL" --rate "$rate")
      else
        args=(--config "$CONFIG" --url "$BASE" --rate "$(python3 -c "print(round($rate / $PER_SESSION))")")
      fi
      /usr/bin/time -f "%U %S" -o "$WORK/time" taskset -c "$GEN_CORE" \
        timeout $((dur + 30)) "$LOADGATE" loadgate attack "${args[@]}" \
        --duration "${dur}s" --cpu "$GEN_CORE" --timeout 10s --json "$out" > "$WORK/log" 2>&1 || code=$?
      python3 bench/holds.py row "$mode" loadgate "$rate" "$dur" "$out" "$WORK/time" "$code" "$rep" >> "$results"
      python3 bench/holds.py line "$(tail -1 "$results")"
    done
  done
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
python3 bench/holds.py summary "$results" workload get   # goal: workload / get at most 1.5
