#!/usr/bin/env bash
# Issue 14's peak open-loop rate, the same rule and the same rate grid for every tool in one run.
#
# nginx (1 worker, the 17-byte file of bench/nginx.sh) on TARGET_CORE, each generator on GEN_CORE,
# 127.0.0.1 only. A rate HOLDS for a tool when, over the run:
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
      python3 - "$tool" "$rate" "$dur" "$out" "$WORK/time" "$code" "$rep" >> "$results" <<'PY'
import json, sys
tool, rate, dur, out, tfile, code, rep = sys.argv[1:8]
rate, dur, code = int(rate), float(dur), int(code)
# oha sends at a constant rate: rate × seconds requests. loadgate's arrivals are a seeded Poisson
# process, whose count over the run varies by about its square root: its own count of arrivals
# (sent and dropped) is what it offered.
offered = rate * dur
try:
    u, s = map(float, open(tfile).read().split()[-2:])
except Exception:
    u = s = float("nan")
try:
    j = json.load(open(out))
except Exception:
    j = None
name = tool
if j is None:
    print(json.dumps({"rep": int(rep), "rate": rate, "tool": name, "code": code, "holds": False,
                      "why": "no result"}))
    sys.exit()
if tool == "oha":
    good = int(j.get("statusCodeDistribution", {}).get("200", 0))
    p50 = (j["latencyPercentiles"].get("p50") or float("nan")) * 1e3
    p99 = (j["latencyPercentiles"].get("p99") or float("nan")) * 1e3
    ok_run = code == 0
else:
    good = j["requests"] - j["errors"]  # errors include the drops
    offered = j["requests"]
    p50, p99 = j["p50_ms"], j["p99_ms"]
    ok_run = code == 0 and j["valid"]
missing = max(offered - good, 0) / offered
why = []
if not p99 <= 10:
    why.append(f"p99 {p99:.1f} ms > 10")
if missing >= 0.001:
    why.append(f"{missing:.2%} without a correct answer")
if not ok_run:
    why.append(f"exit {code}")
print(json.dumps({"rep": int(rep), "rate": rate, "tool": name, "code": code,
                  "answered_per_sec": good / dur, "p50_ms": p50, "p99_ms": p99,
                  "missing": missing, "cpu_us": (u + s) * 1e6 / max(offered, 1),
                  "holds": not why, "why": "; ".join(why)}))
PY
      tail -1 "$results" | jq -r '"\(.tool) \(.rate): \(if .holds then "holds" else "fails (\(.why))" end), \(.answered_per_sec // 0 | floor)/s, p99 \(.p99_ms // "-") ms, \(.cpu_us // "-") µs CPU/req"'
    done
  done
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
python3 - "$results" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
tools = list(dict.fromkeys(r["tool"] for r in rows))
reps = sorted({r["rep"] for r in rows})
print("| rep | rate | tool | answered/s | p50 ms | p99 ms | without an answer | CPU µs/req | holds |")
print("|---|---|---|---|---|---|---|---|---|")
for r in rows:
    f = lambda k, fmt: (fmt.format(r[k]) if k in r and r[k] == r[k] else "–")
    print(f"| {r['rep']} | {r['rate']} | {r['tool']} | {f('answered_per_sec', '{:,.0f}')} | {f('p50_ms', '{:.2f}')} | "
          f"{f('p99_ms', '{:.2f}')} | {f('missing', '{:.3%}')} | {f('cpu_us', '{:.1f}')} | "
          f"{'yes' if r['holds'] else 'no: ' + r['why']} |")
print()
peaks = {}
for rep in reps:
    for t in tools:
        peak = 0
        for r in sorted((r for r in rows if r["rep"] == rep and r["tool"] == t), key=lambda r: r["rate"]):
            if not r["holds"]:
                break
            peak = r["rate"]
        peaks.setdefault(t, []).append(peak)
for t, p in peaks.items():
    print(f"peak of {t}: {', '.join(f'{x:,}' for x in p)} req/s (rep by rep)")
if "oha" in peaks and len(peaks) > 1:
    for t, p in peaks.items():
        if t != "oha":
            ratios = [a / b if b else float("inf") for a, b in zip(p, peaks["oha"])]
            print(f"{t} / oha: {', '.join(f'{x:.2f}' for x in ratios)} (goal: at least 1.25)")
PY
