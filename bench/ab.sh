#!/usr/bin/env bash
# Before/after comparison of loadgate builds (and oha), interleaved in one run, against the same
# nginx as bench/engine.sh (1 worker on TARGET_CORE, generators on GEN_CORE). On a shared machine
# only numbers from one run compare: each rep runs every tool once, in turn, so load that comes
# and goes hits all of them alike.
#
# Usage: bench/ab.sh RATES SECONDS REPS TOOL...
#   TOOL is `oha`, `floor` (bench/floor.c, built here with gcc: the kernel's floor, see there) or
#   a path to a cargo-loadgate binary.
#   e.g. bench/ab.sh "2000 10000" 5 5 /tmp/lg-old target/release/cargo-loadgate oha
# Env:   GEN_CORE=0 TARGET_CORE=1 PORT=18081 GEN_PREFIX="chrt -f 10" (prefix for every generator)
#        ATTACK_ARGS="--realtime" (extra arguments for every cargo-loadgate attack)
# Prints one line per run and, per rate and tool, the median and range of: generator CPU µs per
# request (user+sys of the whole process from /usr/bin/time) and its kernel (sys) part, lag p99
# (loadgate), latency p99.
# Loopback only; every run is bounded in time; nginx is stopped by PID on exit.
set -euo pipefail
rates=$1 dur=$2 reps=$3; shift 3
GEN_CORE=${GEN_CORE:-0}
TARGET_CORE=${TARGET_CORE:-1}
PORT=${PORT:-18081}
GEN_PREFIX=${GEN_PREFIX:-}
ATTACK_ARGS=${ATTACK_ARGS:-}
URL="http://127.0.0.1:$PORT/index.txt"

WORK=$(mktemp -d /tmp/loadgate-ab.XXXXXX)
# shellcheck source=bench/nginx.sh
. "$(dirname "$0")/nginx.sh"
cleanup() {
  stop_nginx
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
start_nginx

case " $* " in
  *" floor "*)
    command -v gcc > /dev/null || { echo "the floor tool needs gcc (apt-get install -y gcc)" >&2; exit 1; }
    gcc -O2 -o "$WORK/floor" "$(dirname "$0")/floor.c" -lm ;;
esac

echo "# $(date -u +%FT%TZ) load average $(cut -d' ' -f1-3 /proc/loadavg); ${dur}s runs, $reps reps, prefix ${GEN_PREFIX:-none}, attack args ${ATTACK_ARGS:-none}"
results=$WORK/results
: > "$results"
for rep in $(seq "$reps"); do
  for rate in $rates; do
    idx=0
    for tool in "$@"; do
      idx=$((idx + 1))
      out=$WORK/out-$idx
      if [ "$tool" = floor ]; then
        # shellcheck disable=SC2086
        /usr/bin/time -f "%U %S" -o "$WORK/time" $GEN_PREFIX taskset -c "$GEN_CORE" \
          "$WORK/floor" 127.0.0.1 "$PORT" /index.txt "$rate" "$dur" 256 > "$out" 2>/dev/null || true
      elif [ "$tool" = oha ]; then
        # shellcheck disable=SC2086
        /usr/bin/time -f "%U %S" -o "$WORK/time" $GEN_PREFIX taskset -c "$GEN_CORE" \
          oha --no-tui --output-format json -z "${dur}s" -q "$rate" -c 100 "$URL" > "$out" 2>/dev/null || true
      else
        # shellcheck disable=SC2086
        /usr/bin/time -f "%U %S" -o "$WORK/time" $GEN_PREFIX taskset -c "$GEN_CORE" \
          "$tool" loadgate attack --url "$URL" --rate "$rate" --duration "${dur}s" --cpu "$GEN_CORE" \
          --timeout 10s --json "$out" $ATTACK_ARGS > /dev/null 2>&1 || true
      fi
      python3 - "$idx:$tool" "$rate" "$out" "$WORK/time" >> "$results" <<'PY'
import json, sys
tool, rate, out, tfile = sys.argv[1:5]
u, s = map(float, open(tfile).read().split()[-2:])
try:
    j = json.load(open(out))
except Exception:
    print(f"{tool} {rate} nan nan nan 0 nan"); sys.exit()
if "latencyPercentiles" in j:
    n = sum(j.get("statusCodeDistribution", {}).values())
    p99 = (j["latencyPercentiles"]["p99"] or 0) * 1e3
    lag = float("nan")
else:
    n, p99, lag = j["requests"], j["p99_ms"], j["lag_p99_ms"]
print(f"{tool} {rate} {(u + s) * 1e6 / max(n, 1):.1f} {lag:.3f} {p99:.3f} {n} {s * 1e6 / max(n, 1):.1f}")
PY
      tail -1 "$results"
    done
  done
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| rate | tool | CPU µs/req median (range) | of which kernel (sys) | lag p99 ms median (range) | latency p99 ms median | runs (CPU) |"
echo "|---|---|---|---|---|---|---|"
python3 - "$results" <<'PY'
import statistics, sys, math
rows = {}
for line in open(sys.argv[1]):
    tool, rate, cpu, lag, p99, n, sys_us = line.split()
    rows.setdefault((int(rate), tool), []).append((float(cpu), float(lag), float(p99), float(sys_us)))
def fmt(v):
    v = [x for x in v if not math.isnan(x)]
    return f"{statistics.median(v):.2f} ({min(v):.2f}–{max(v):.2f})" if v else "–"
for (rate, tool), runs in sorted(rows.items(), key=lambda kv: (kv[0][0], kv[0][1])):
    cpus = [r[0] for r in runs]
    name = tool.split(":", 1)[1].replace("/tmp/", "")
    print(f"| {rate} | {name} | {fmt(cpus)} | {fmt([r[3] for r in runs])} | {fmt([r[1] for r in runs])} | {fmt([r[2] for r in runs])} | {' '.join(f'{c:.1f}' for c in cpus)} |")
PY
