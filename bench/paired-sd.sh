#!/usr/bin/env bash
# The per-pair SD of paired base/head blocks, measured with a tool that is not ours (issue 13).
#
# Two live copies of the same demo-service binary (base and head: byte-identical, so this is an
# A/A) run as processes on two loopback ports, both pinned to TARGET_CORE; oha, pinned to GEN_CORE,
# drives them in blocks of BLOCK seconds at RATE req/s, one side after the other, in a balanced
# seeded order: every two pairs run ABBA or BAAB (A the base, B the head), drawn from SEED with
# bash's $RANDOM: the scheme of cargo-loadgate's plan/pairing.rs, not its draw. Before each
# block a WARMUP-second oha run on the same side is discarded. Per pair it prints the log-ratios
# ln(head/base) of p50 and p99; at the end the SD of the per-pair log-ratios and the 98% interval
# half-width t(0.99, n−1) · SD / √n, the figures of the table in issue 13 (log-ratios are quoted
# as percentages: 0.03 = 3%). Core 1 is shared with whatever else runs there: read the load
# average the header prints.
#
# Usage: bench/paired-sd.sh PAIRS BLOCK_SECONDS RATE
#   e.g. bench/paired-sd.sh 10 5 400        # the demo row of issue 13 (DEMO_CPU_US=1000)
#        DEMO_CPU_US=0 bench/paired-sd.sh 10 3 5000
# Env:   DEMO_CPU_US=1000 (the demo's CPU per request, µs; 0 turns the knob off)
#        WARMUP=1 (seconds discarded before each block)  SEED=1  CONNECTIONS=50 (oha -c)
#        GEN_CORE=0 TARGET_CORE=1  BASE_PORT=18091 HEAD_PORT=18092  ROUTE=/ (the knob skips /health)
#        DEMO=target/release/demo-service (built with `cargo build --release -p demo-service`)
#        OHA_ARGS="--latency-correction" (oha measures from the intended send time: open loop)
# Needs oha (`cargo install --locked oha`), jq, taskset, awk.
# Loopback only; every oha run is bounded by -z; the script stops only the two services it
# started, by PID, on every exit path.
set -euo pipefail
if [ $# -ne 3 ]; then
  sed -n '15,23p' "$0" >&2
  exit 2
fi
pairs=$1 block=$2 rate=$3
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEMO=${DEMO:-$ROOT/target/release/demo-service}
DEMO_CPU_US=${DEMO_CPU_US:-1000}
WARMUP=${WARMUP:-1}
SEED=${SEED:-1}
CONNECTIONS=${CONNECTIONS:-50}
GEN_CORE=${GEN_CORE:-0}
TARGET_CORE=${TARGET_CORE:-1}
BASE_PORT=${BASE_PORT:-18091}
HEAD_PORT=${HEAD_PORT:-18092}
ROUTE=${ROUTE:-/}
OHA_ARGS=${OHA_ARGS:---latency-correction}

missing=0
for tool in oha jq taskset awk; do
  command -v "$tool" > /dev/null || { echo "missing: $tool" >&2; missing=1; }
done
[ -x "$DEMO" ] || { echo "missing: $DEMO (cargo build --release -p demo-service)" >&2; missing=1; }
[ "$missing" = 0 ] || exit 1

WORK=$(mktemp -d /tmp/loadgate-paired-sd.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do
    kill "$pid" 2> /dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2> /dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_side NAME PORT: one copy of the demo on TARGET_CORE, waited for until it answers.
start_side() {
  local name=$1 port=$2
  DEMO_BIND=127.0.0.1 PORT=$port DEMO_CPU_US=$DEMO_CPU_US \
    taskset -c "$TARGET_CORE" "$DEMO" > "$WORK/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do
    if grep -q "listening" "$WORK/$name.log" 2> /dev/null; then
      return 0
    fi
    kill -0 "${pids[-1]}" 2> /dev/null || break
    sleep 0.1
  done
  echo "$name did not start on 127.0.0.1:$port:" >&2
  tail -5 "$WORK/$name.log" >&2
  exit 1
}
start_side base "$BASE_PORT"
start_side head "$HEAD_PORT"

# run_oha PORT SECONDS OUT: one open-loop oha run, bounded by -z.
run_oha() {
  # shellcheck disable=SC2086
  taskset -c "$GEN_CORE" oha --no-tui --output-format json -z "${2}s" -q "$rate" \
    -c "$CONNECTIONS" $OHA_ARGS "http://127.0.0.1:$1$ROUTE" > "$3" 2> "$WORK/oha.err" || {
    echo "oha failed:" >&2
    tail -5 "$WORK/oha.err" >&2
    exit 1
  }
}

# block SIDE PAIR: warm-up (discarded), then the measured block; prints "p50 p99 requests errors".
block() {
  local side=$1 pair=$2 port
  port=$([ "$side" = A ] && echo "$BASE_PORT" || echo "$HEAD_PORT")
  if [ "$WARMUP" != 0 ]; then
    run_oha "$port" "$WARMUP" "$WORK/warmup.json"
  fi
  run_oha "$port" "$block" "$WORK/pair-$pair-$side.json"
  jq -r '[.latencyPercentiles.p50, .latencyPercentiles.p99,
          ((.statusCodeDistribution // {}) | [.[]] | add // 0),
          ((.errorDistribution // {}) | [.[]] | add // 0)] | @tsv' "$WORK/pair-$pair-$side.json"
}

echo "# $(date -u +%FT%TZ) paired A/A with oha $(oha --version | awk '{print $2}'): demo-service ×2 on core $TARGET_CORE" \
  "(DEMO_CPU_US=$DEMO_CPU_US), oha on core $GEN_CORE, $rate req/s, -c $CONNECTIONS $OHA_ARGS"
echo "# $pairs pairs × ${block}s blocks (warm-up ${WARMUP}s each), seed $SEED, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| pair | order | base p50 ms | head p50 ms | ln ratio p50 | base p99 ms | head p99 ms | ln ratio p99 | requests (A/B) | errors (A/B) |"
echo "|---|---|---|---|---|---|---|---|---|---|"
RANDOM=$SEED
ratios=$WORK/ratios
: > "$ratios"
lead=A
for pair in $(seq 0 $((pairs - 1))); do
  if [ $((pair % 2)) = 0 ]; then
    # A new group of two pairs: ABBA or BAAB, drawn here in the main shell (a subshell would
    # reseed $RANDOM, and the order would not follow SEED).
    draw=$((RANDOM % 2))
    lead=$([ "$draw" = 0 ] && echo A || echo B)
  else
    lead=$([ "$lead" = A ] && echo B || echo A)
  fi
  second=$([ "$lead" = A ] && echo B || echo A)
  read -r p50_1 p99_1 n_1 e_1 < <(block "$lead" "$pair")
  read -r p50_2 p99_2 n_2 e_2 < <(block "$second" "$pair")
  if [ "$lead" = A ]; then
    set -- "$p50_1" "$p99_1" "$n_1" "$e_1" "$p50_2" "$p99_2" "$n_2" "$e_2"
  else
    set -- "$p50_2" "$p99_2" "$n_2" "$e_2" "$p50_1" "$p99_1" "$n_1" "$e_1"
  fi
  awk -v pair="$pair" -v order="$lead$second" -v b50="$1" -v b99="$2" -v bn="$3" -v be="$4" \
    -v h50="$5" -v h99="$6" -v hn="$7" -v he="$8" -v out="$ratios" 'BEGIN {
      if (b50 <= 0 || h50 <= 0 || b99 <= 0 || h99 <= 0) { print "a block had no answers" > "/dev/stderr"; exit 1 }
      r50 = log(h50 / b50); r99 = log(h99 / b99)
      printf "| %d | %s | %.3f | %.3f | %+.4f | %.3f | %.3f | %+.4f | %d/%d | %d/%d |\n", pair, order,
        b50 * 1e3, h50 * 1e3, r50, b99 * 1e3, h99 * 1e3, r99, bn, hn, be, he
      printf "%.6f %.6f\n", r50, r99 >> out
    }'
done

echo
awk -v n="$pairs" '
  # t(0.99, df): the table up to 30 degrees of freedom, then the Cornish–Fisher expansion
  # (as stats::paired does).
  function t99(df,   z, z3, z5, table) {
    split("31.821 6.965 4.541 3.747 3.365 3.143 2.998 2.896 2.821 2.764 2.718 2.681 2.650 2.624 " \
      "2.602 2.583 2.567 2.552 2.539 2.528 2.518 2.508 2.500 2.492 2.485 2.479 2.473 2.467 2.462 2.457", table, " ")
    if (df <= 30) return table[df]
    z = 2.326348; z3 = z^3; z5 = z^5
    return z + (z3 + z) / (4 * df) + (5 * z5 + 16 * z3 + 3 * z) / (96 * df^2) \
      + (3 * z^7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * df^3)
  }
  { a[NR] = $1; b[NR] = $2; sa += $1; sb += $2 }
  END {
    if (NR < 2) { print "fewer than two pairs: no SD"; exit 0 }
    ma = sa / NR; mb = sb / NR
    for (i = 1; i <= NR; i++) { va += (a[i] - ma)^2; vb += (b[i] - mb)^2 }
    sda = sqrt(va / (NR - 1)); sdb = sqrt(vb / (NR - 1))
    t = t99(NR - 1)
    printf "| pairs | mean ln ratio (p50 / p99) | per-pair log-ratio SD (p50 / p99) | A/A 98%% interval half-width, %d pairs |\n", NR
    print "|---|---|---|---|"
    printf "| %d | %+.1f%% / %+.1f%% | %.1f%% / %.1f%% | ±%.1f%% / ±%.1f%% |\n", NR, ma * 100, mb * 100,
      sda * 100, sdb * 100, t * sda / sqrt(NR) * 100, t * sdb / sqrt(NR) * 100
  }' "$ratios"
# What the errors were (oha counts a request cut off by the end of -z as one).
errors=$(jq -s -c '[.[] | (.errorDistribution // {}) | to_entries[]] | group_by(.key)
  | map({(.[0].key): (map(.value) | add)}) | add // {}' "$WORK"/pair-*.json)
[ "$errors" = "{}" ] || echo "# errors in measured blocks: $errors"
