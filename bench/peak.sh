#!/usr/bin/env bash
# Issue 14's peak open-loop rate, the same rule and the same rate grid for every tool in one run.
#
# nginx (1 worker, the 17-byte file of bench/nginx.sh) on TARGET_CORE, each generator on GEN_CORE,
# 127.0.0.1 only. A rate HOLDS for a tool when, over the run (bench/holds.py, shared with run-mode.sh):
#   - the p99 latency, timed from each request's intended send time, is at most 10 ms
#     (loadgate always times from the intended time; oha runs with --latency-correction);
#   - under 0.1% of the offered requests lack a correct answer: dropped, never sent, or failed
#     (oha offers rate × seconds; loadgate's arrivals are Poisson, and it counts what it offered);
#   - for loadgate, the run kept its own schedule (exit 0: its lag and drop limits).
# A tool's peak is the highest rate of the grid it holds with every lower rate held too.
# CPU is user+sys of the whole generator process from /usr/bin/time, per offered request.
#
# Usage: bench/peak.sh [TOOL...]       TOOL: a cargo-loadgate binary (default
#                                      target/release/cargo-loadgate) or `oha`
# Env:   RATES="20000 40000 60000 80000 100000 120000" SECONDS_PER_RATE=8 REPS=1
#        GEN_CORE=0 TARGET_CORE=1 PORT=18082 OHA_CONNECTIONS=100
# Each rep runs every rate, and at each rate every tool in turn, so load that comes and goes on a
# shared machine hits all of them alike. Loopback only; every run is bounded by its duration (and
# a timeout); nginx is stopped by PID on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
RATES=${RATES:-"20000 40000 60000 80000 100000 120000"}
dur=${SECONDS_PER_RATE:-8}
REPS=${REPS:-1}
GEN_CORE=${GEN_CORE:-0}
TARGET_CORE=${TARGET_CORE:-1}
PORT=${PORT:-18082}
OHA_CONNECTIONS=${OHA_CONNECTIONS:-100}
URL="http://127.0.0.1:$PORT/index.txt"
tools=("$@")
[ ${#tools[@]} -gt 0 ] || tools=(target/release/cargo-loadgate oha)
for tool in "${tools[@]}"; do
  if [ "$tool" = oha ]; then
    command -v oha > /dev/null || { echo "oha is missing: cargo install --locked oha" >&2; exit 1; }
  elif [ ! -x "$tool" ]; then
    echo "$tool is not an executable (cargo build --release -p cargo-loadgate?)" >&2
    exit 1
  fi
done
for need in nginx jq /usr/bin/time taskset; do
  command -v "$need" > /dev/null || { echo "$need is missing (apt-get install -y nginx jq time util-linux)" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/loadgate-peak.XXXXXX)
# shellcheck source=bench/nginx.sh
. bench/nginx.sh
cleanup() {
  stop_nginx
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
start_nginx

echo "# $(date -u +%FT%TZ) $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); ${dur}s a rate, $REPS rep(s); nginx on core $TARGET_CORE, generators on core $GEN_CORE"
results=$WORK/results
: > "$results"
for rep in $(seq "$REPS"); do
  for rate in $RATES; do
    for tool in "${tools[@]}"; do
      out=$WORK/out.json
      rm -f "$out"
      code=0
      if [ "$tool" = oha ]; then
        /usr/bin/time -f "%U %S" -o "$WORK/time" taskset -c "$GEN_CORE" \
          timeout $((dur + 30)) oha --no-tui --output-format json --latency-correction \
          -z "${dur}s" -q "$rate" -c "$OHA_CONNECTIONS" "$URL" > "$out" 2> /dev/null || code=$?
      else
        /usr/bin/time -f "%U %S" -o "$WORK/time" taskset -c "$GEN_CORE" \
          timeout $((dur + 30)) "$tool" loadgate attack --url "$URL" --rate "$rate" \
          --duration "${dur}s" --cpu "$GEN_CORE" --timeout 10s --json "$out" > /dev/null 2>&1 || code=$?
      fi
      kind=loadgate
      [ "$tool" = oha ] && kind=oha
      python3 bench/holds.py row "$tool" "$kind" "$rate" "$dur" "$out" "$WORK/time" "$code" "$rep" >> "$results"
      python3 bench/holds.py line "$(tail -1 "$results")"
    done
  done
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
python3 bench/holds.py summary "$results"
