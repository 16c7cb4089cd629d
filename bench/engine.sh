#!/usr/bin/env bash
# Engine benchmark: loadgate attack against oha and wrk (and wrk2 if present), side by side.
#
# nginx (1 worker, a tiny static file, 127.0.0.1) runs pinned to core 1, every generator to
# core 0. Reports: generator CPU µs per request at open-loop 2,000 and 10,000 req/s (median of
# 3), the highest open-loop rate loadgate sustains on one core with lag p99 < 1 ms and < 0.1%
# dropped, loadgate's RSS after 1M requests, and a stall test (nginx's worker SIGSTOPped for 1 s
# in the middle of a 10 s run at 2,000 req/s), which also runs loadgate with a fixed pool of 100
# warm connections (`loadgate-c100`, like oha's and wrk's -c 100) beside its on-demand default.
#
# Usage: bench/engine.sh            (from the workspace root; about 10 minutes)
# Env:   REPS=3 DURATION=10 LOADGATE=target/release/cargo-loadgate GEN_CORE=0 TARGET_CORE=1
#        SECTIONS="noise cpu max rss stall" (a subset runs only those sections)
#        GEN_PREFIX="chrt -f 10" runs every generator under that prefix (SCHED_FIFO keeps other
#        processes on the generator core from preempting it; needs root or CAP_SYS_NICE)
# Loopback only; every run is bounded in time; nginx is stopped by PID on exit.
set -euo pipefail

REPS=${REPS:-3}
SECTIONS=${SECTIONS:-noise cpu max rss stall}
GEN_PREFIX=${GEN_PREFIX:-}
want() { case " $SECTIONS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
DURATION=${DURATION:-10}
GEN_CORE=${GEN_CORE:-0}
TARGET_CORE=${TARGET_CORE:-1}
PORT=${PORT:-18080}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOADGATE=${LOADGATE:-$ROOT/target/release/cargo-loadgate}
URL="http://127.0.0.1:$PORT/index.txt"

need() {
  if ! command -v "$1" >/dev/null 2>&1 && [ ! -x "$1" ]; then
    echo "missing: $1 — $2" >&2
    return 1
  fi
}
missing=0
need nginx "apt-get install -y nginx" || missing=1
need wrk "apt-get install -y wrk" || missing=1
need oha "cargo install --locked oha" || missing=1
need taskset "apt-get install -y util-linux" || missing=1
need python3 "apt-get install -y python3" || missing=1
need /usr/bin/time "apt-get install -y time" || missing=1
need "$LOADGATE" "cargo build --release -p cargo-loadgate" || missing=1
[ "$missing" = 0 ] || exit 2
HAVE_WRK2=0; command -v wrk2 >/dev/null 2>&1 && HAVE_WRK2=1
[ "$(nproc)" -ge 2 ] || { echo "needs at least 2 cores (generator and target apart)" >&2; exit 2; }

WORK=$(mktemp -d /tmp/loadgate-bench.XXXXXX)
# shellcheck source=bench/nginx.sh
. "$ROOT/bench/nginx.sh"
cleanup() {
  stop_nginx
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
start_nginx

# run_timed NAME CMD... : runs CMD pinned to the generator core, records "user sys maxrss_kb".
run_timed() {
  local name=$1; shift
  # shellcheck disable=SC2086
  /usr/bin/time -f "%U %S %M" -o "$WORK/$name.time" $GEN_PREFIX taskset -c "$GEN_CORE" "$@" > "$WORK/$name.out" 2> "$WORK/$name.err" || true
}

# Parsers print: requests p50 p90 p99 p999 max (ms) for a tool's output file.
parse() {
  python3 - "$@" <<'PY'
import json, re, sys
tool, path = sys.argv[1], sys.argv[2]
text = open(path).read()
if tool == "loadgate":
    j = json.load(open(path))
    print(j["requests"], j["p50_ms"], j["p90_ms"], j["p99_ms"], j["p999_ms"], j["max_ms"], j["lag_p99_ms"], j["dropped"], j["errors"])
elif tool == "oha":
    j = json.loads(text)
    p = j["latencyPercentiles"]
    n = sum(j.get("statusCodeDistribution", {}).values())
    errs = sum(j.get("errorDistribution", {}).values())
    ms = lambda v: (v or 0) * 1000
    print(n, ms(p["p50"]), ms(p["p90"]), ms(p["p99"]), ms(p["p99.9"]), ms(j["summary"]["slowest"]), "-", "-", errs)
else:  # wrk / wrk2 with bench/wrk-report.lua
    m = re.search(r"LOADGATE_REPORT (\S+) (\S+) (\S+) (\S+) (\S+) (\S+) (\S+)", text)
    print(*(m.groups()[:6] if m else ["0"] * 6), "-", "-", m.group(7) if m else "-")
PY
}

cpu_us() {  # cpu_us TIMEFILE REQUESTS
  python3 -c "import sys; u,s,_=open(sys.argv[1]).read().split()[-3:]; n=int(float(sys.argv[2])); print(f'{(float(u)+float(s))*1e6/n:.1f}' if n else 'n/a')" "$1" "$2"
}
median() { python3 -c "import sys,statistics; v=[float(x) for x in sys.argv[1:] if x not in ('n/a','-')]; print(f'{statistics.median(v):.1f}' if v else 'n/a')" "$@"; }

LUA="$ROOT/bench/wrk-report.lua"
tool_cmd() {  # tool_cmd TOOL RATE DURATION OUTNAME
  local tool=$1 rate=$2 dur=$3 out=$4
  case $tool in
    loadgate) echo "$LOADGATE loadgate attack --url $URL --rate $rate --duration ${dur}s --cpu $GEN_CORE --timeout 10s --json $WORK/$out.json" ;;
    # A fixed pool of 100 warm connections, as oha's and wrk2's -c 100 (docs/config.md).
    loadgate-c100) echo "$LOADGATE loadgate attack --url $URL --rate $rate --duration ${dur}s --cpu $GEN_CORE --timeout 10s --connections 100 --json $WORK/$out.json" ;;
    oha) echo "oha --no-tui --output-format json -z ${dur}s -q $rate -c 100 $URL" ;;
    oha-lc) echo "oha --no-tui --output-format json -z ${dur}s -q $rate -c 100 --latency-correction $URL" ;;
    wrk) echo "wrk -t1 -c50 -d${dur}s -s $LUA $URL" ;;
    wrk2) echo "wrk2 -t1 -c100 -d${dur}s -R $rate -s $LUA $URL" ;;
  esac
}
result_file() {  # parse the right output of a run
  local tool=$1 out=$2
  case $tool in
    loadgate|loadgate-c100) parse loadgate "$WORK/$out.json" ;;
    oha|oha-lc) parse oha "$WORK/$out.out" ;;
    *) parse wrk "$WORK/$out.out" ;;
  esac
}

TOOLS="loadgate oha oha-lc wrk"
[ "$HAVE_WRK2" = 1 ] && TOOLS="$TOOLS wrk2"

echo "# loadgate engine benchmark — $(date -u +%Y-%m-%d) — $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, kernel $(uname -r)"
echo "# nginx $(nginx -v 2>&1 | cut -d/ -f2) pinned to core $TARGET_CORE; generators pinned to core $GEN_CORE; ${DURATION}s runs, median of $REPS"
echo "# oha $(oha --version | awk '{print $2}'), $(wrk -v 2>&1 | head -1 | awk '{print $1, $2}')"
echo "# load average before the run: $(cut -d' ' -f1-3 /proc/loadavg); generator prefix: ${GEN_PREFIX:-none}"
echo

if want noise; then
echo "## How late the generator core wakes a thread that does nothing else (1,000 wake-ups/s, 3 s)"
echo
echo "The floor under any generator's pacing lag on this core right now: a timer wake-up of a bare"
echo "sleeper, with the generator prefix (as the generators run) and under SCHED_FIFO."
echo
for prefix in "$GEN_PREFIX" "chrt -f 10"; do
  # shellcheck disable=SC2086
  printf '%s: ' "${prefix:-no prefix}"
  $prefix taskset -c "$GEN_CORE" python3 "$ROOT/bench/sleeper.py" 3000 0.001 || echo "(could not run)"
done
echo

fi

if want cpu; then
echo "## CPU per request (generator user+sys CPU / requests sent)"
echo
echo "| tool | mode | rate (req/s) | achieved (req/s) | CPU µs/request (median) | p99 ms | runs |"
echo "|---|---|---|---|---|---|---|"
for rate in 2000 10000; do
  for tool in $TOOLS; do
    cpus=(); achieved=(); p99s=()
    for rep in $(seq "$REPS"); do
      name="cpu-$tool-$rate-$rep"
      # shellcheck disable=SC2046
      run_timed "$name" $(tool_cmd "$tool" "$rate" "$DURATION" "$name")
      read -r n _ _ p99 _ _ _ _ _ < <(result_file "$tool" "$name") || true
      cpus+=("$(cpu_us "$WORK/$name.time" "${n:-0}")")
      achieved+=("$(python3 -c "print(${n:-0}/$DURATION)")")
      p99s+=("${p99:-n/a}")
    done
    mode=open-loop; [ "$tool" = wrk ] && mode="closed-loop (50 conns, max rate)"
    echo "| $tool | $mode | $rate | $(median "${achieved[@]}") | $(median "${cpus[@]}") | $(median "${p99s[@]}") | ${cpus[*]} |"
  done
done
echo

fi

if want max; then
echo "## Highest open-loop rate loadgate sustains on one core (lag p99 < 1 ms, < 0.1% dropped, 5 s steps)"
echo
echo "| rate (req/s) | achieved | lag p99 ms | dropped | errors | CPU µs/request | holds |"
echo "|---|---|---|---|---|---|---|"
best=0
for rate in 1000 2000 3000 5000 7500 10000 15000 20000 25000 30000; do
  name="max-$rate"
  run_timed "$name" $(tool_cmd loadgate "$rate" 5 "$name")
  read -r n _ _ _ _ _ lag dropped errors < <(result_file loadgate "$name") || true
  holds=$(python3 -c "n=$n; print('yes' if n>0 and $lag<1.0 and $dropped/max(n+$dropped,1)<0.001 and $errors==0 else 'no')")
  echo "| $rate | $(python3 -c "print(round($n/5))") | $lag | $dropped | $errors | $(cpu_us "$WORK/$name.time" "$n") | $holds |"
  if [ "$holds" = yes ]; then best=$rate; else break; fi
done
echo
echo "Highest rate that held: **$best req/s**"
echo

fi

if want rss; then
echo "## loadgate RSS over a run of 1M requests (20,000 req/s for 50 s)"
echo
"$LOADGATE" loadgate attack --url "$URL" --rate 20000 --duration 50s --cpu "$GEN_CORE" --json "$WORK/rss.json" > "$WORK/rss.out" 2> "$WORK/rss.err" &
LG=$!
rss_series=()
for t in $(seq 1 52); do
  sleep 1
  kill -0 "$LG" 2>/dev/null || break
  rss=$(awk '/VmRSS/ {print $2}' /proc/"$LG"/status 2>/dev/null || echo 0)
  rss_series+=("$t:$rss")
done
wait "$LG" || true
read -r n _ _ _ _ _ lag dropped errors < <(parse loadgate "$WORK/rss.json")
echo "requests $n, lag p99 $lag ms, dropped $dropped, errors $errors"
echo
echo "RSS (KiB) by second: ${rss_series[*]}"
echo

fi

if want stall; then
echo "## Stall test: nginx's worker SIGSTOPped for 1 s at t=4.5 s of a 10 s run at 2,000 req/s"
echo
echo "Truth: ~10% of requests wait up to 1 s, so p90 ≈ base, p99 ≈ 900 ms, p99.9 ≈ 990 ms, max ≈ 1000 ms,"
echo "for a client whose connections are open before the stall (oha and wrk: -c; loadgate-c100:"
echo "--connections 100). loadgate's default opens connections on demand, so nginx must accept those"
echo "opened during the stall before it answers them (~50 ms with multi_accept off): that adds to its tail."
echo
echo "| tool | requests | p90 ms | p99 ms | p99.9 ms | max ms |"
echo "|---|---|---|---|---|---|"
for tool in loadgate-c100 $TOOLS; do
  name="stall-$tool"
  # shellcheck disable=SC2046
  ( run_timed "$name" $(tool_cmd "$tool" 2000 10 "$name") ) &
  RUNNER=$!
  sleep 4.5
  kill -STOP "$WORKER_PID"
  sleep 1
  kill -CONT "$WORKER_PID"
  wait "$RUNNER" || true
  read -r n _ p90 p99 p999 max _ _ _ < <(result_file "$tool" "$name") || true
  echo "| $tool | $n | $p90 | $p99 | $p999 | $max |"
  sleep 1
done
fi
