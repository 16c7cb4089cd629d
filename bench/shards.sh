#!/usr/bin/env bash
# Throughput of `run --shard i/N` processes against one process, on this machine (issue 18).
#
#   cargo build --release -p cargo-loadgate -p demo-service
#   bench/shards.sh                                   # RATES="4000 8000 16000" SHARDS=4 HOLD=4s
#   GEN_CORES=0,1 bench/shards.sh                     # generators allowed on every core
#
# The target is the demo service (release build, `GET /health`) on 127.0.0.1, pinned to
# $TARGET_CORE. For each offered rate, one `run` (one process, one loop) and then $SHARDS shard
# processes (`--shard i/$SHARDS`, one loop each, started together with `--start-at`, merged with
# `cargo loadgate merge`) send one ramp step of $HOLD; every generator process is pinned to
# $GEN_CORES. Printed per rate and mode: the answers per second over the step's measured part, the
# pacing lag p99 (ms, the worst window), the drop count, whether the step kept its schedule (valid)
# and the generators' CPU per request sent (µs, all shards' together). The highest rate
# whose step is valid with at least 99% of the offered rate answered is what the mode sustains.
#
# Only loopback; every process this script starts is stopped by PID on exit; nothing is left
# behind but $WORK (printed, removed unless KEEP=1).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$ROOT/target/release/cargo-loadgate}
DEMO=${DEMO:-$ROOT/target/release/demo-service}
RATES=${RATES:-"4000 8000 16000"}
SHARDS=${SHARDS:-4}
HOLD=${HOLD:-4s}
TARGET_CORE=${TARGET_CORE:-1}
GEN_CORES=${GEN_CORES:-0}
PORT=${PORT:-18718}
WORK=$(mktemp -d /tmp/loadgate-shards.XXXXXX)
URL="http://127.0.0.1:$PORT"
PIDS=()

cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

for f in "$BIN" "$DEMO"; do
  [ -x "$f" ] || { echo "missing $f: cargo build --release -p cargo-loadgate -p demo-service" >&2; exit 1; }
done

PORT=$PORT DEMO_BIND=127.0.0.1 taskset -c "$TARGET_CORE" "$DEMO" >"$WORK/demo.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do curl -fsS "$URL/health" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS "$URL/health" >/dev/null || { echo "the demo did not come up" >&2; exit 1; }

config() { # rate
  cat <<TOML
[target]
url = "$URL"
ready = { http = "/health", timeout = "5s" }

[slo]
p99 = "200ms"
min-requests = 10

[workload]
seed = 18
sessions-per-sec = $1
entry = "health"

[[workload.operation]]
name = "health"
request = { path = "/health" }

[ramp]
steps = ["100%"]
hold = "$HOLD"
warmup = "1s"
refine = 0

[soak]
duration = "0s"

[generator]
threads = 1
TOML
}

# Prints "answers/s lag_p99_ms dropped valid" of the first phase of a result.json.
figures() {
  python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
p = r["phases"][0]
answered = sum(w.get("answered", 0) or 0 for w in p["windows"]["windows"])
secs = p["measured_ms"] / 1e3
lag = max((w.get("lag_p99_ms", 0) for w in p["windows"]["windows"]), default=0)
valid = not p["validity"]["reasons"]
cpu = p.get("generator_cpu_ms")
per_request = f"{cpu * 1e3 / p['requests_total']:8.2f}" if cpu and p["requests_total"] else "       -"
print(f"{answered / secs:9.0f} {lag:8.2f} {p['counters']['dropped']:7d} {str(valid):>5} {per_request}")
PY
}

echo "target: demo-service on core $TARGET_CORE; generators on cores $GEN_CORES; step $HOLD"
printf '%-7s %-10s %9s %8s %7s %5s %8s\n' rate mode "answers/s" "lag p99" dropped valid "µs/req"
for rate in $RATES; do
  dir="$WORK/$rate"
  mkdir -p "$dir"
  config "$rate" >"$dir/loadgate.toml"
  taskset -c "$GEN_CORES" "$BIN" loadgate run --config "$dir/loadgate.toml" --keep-going \
    --out-dir "$dir/one" >"$dir/one.log" 2>&1 || true
  printf '%-7s %-10s %s\n' "$rate" "1 process" "$(figures "$dir/one/result.json")"

  start=$(( $(date +%s%3N) + 6000 ))
  shard_pids=()
  for i in $(seq 0 $((SHARDS - 1))); do
    taskset -c "$GEN_CORES" "$BIN" loadgate run --config "$dir/loadgate.toml" --keep-going \
      --shard "$i/$SHARDS" --start-at "$start" --out-dir "$dir/shard-$i" >"$dir/shard-$i.log" 2>&1 &
    shard_pids+=($!)
    PIDS+=($!)
  done
  for pid in "${shard_pids[@]}"; do wait "$pid" || true; done
  # A verdict or an invalid run is a figure here; only a merge that could not run stops the script.
  code=0
  "$BIN" loadgate merge --config "$dir/loadgate.toml" --out-dir "$dir/merged" \
    "$dir"/shard-*/result.json >"$dir/merge.log" 2>&1 || code=$?
  case $code in 1|2) cat "$dir/merge.log" >&2; exit 1 ;; esac
  skew=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['shards']['skew_ms'])" "$dir/merged/result.json")
  printf '%-7s %-10s %s  (start skew %.1f ms)\n' "$rate" "$SHARDS shards" "$(figures "$dir/merged/result.json")" "$skew"
done
