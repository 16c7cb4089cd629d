#!/usr/bin/env bash
# Issue 13's whole goal series for paired mode, in resumable steps (about 70 paired `ci` gates of
# about five minutes each: some six hours of a quiet machine, more than one sitting).
#
#   bench/paired-goals.sh                 every step, in order
#   STEPS="slow-aa fast" bench/paired-goals.sh
#   bench/paired-goals.sh keep            copy the finished runs into bench/results/ (to commit)
#   AA=10 INJECTED=0 STEPS=fast bench/paired-goals.sh
#                                         at most that many runs of each kind this sitting
#
# Steps (each a `qualify --paired --resume` in its own directory under
# target/loadgate/paired-goals/<series>/<step>/<commit>/):
#   slow-aa    the demo with DEMO_CPU_US=1000 (p50 ≈ 1-2 ms), 20 A/A runs and 10 with
#              DEMO_CPU_US=1080 on the head (+8% CPU: about +15% p50 at 60% of the knee)
#   slow-p99   10 runs with DEMO_CPU_US=1100 on the head (+10% CPU: +29…36% p99 measured), no A/A runs
#   slow-cap   10 runs with DEMO_CPU_US=1250 on the head (capacity × 0.8), no A/A runs
#   fast       the demo without its knob at a few thousand req/s: 10 A/A runs and 10 with
#              DEMO_CPU_US=200 on the head (+0.2 ms per request)
#
# Every finished run is kept, so the command can be stopped (Ctrl-C cleans up the run in progress)
# and run again later at the same commit: it goes on where it stopped. A step whose settings or
# commit differ from the kept runs' is refused (exit 2) rather than pooled.
#
# Across commits (a series takes more than one sitting, and each sitting starts from a fresh clone):
# `keep` copies each step's finished runs to bench/results/paired-goals/<series>/<step>/<commit>/ (their
# qualify-run.json and qualify-series.json, and each result's pairs, blocks and overall metrics
# as pairs.json). Commit them. A later sitting pools every kept series of the step made at another
# commit (`qualify --pool`, which checks that its settings are the same) and makes only the runs
# still missing from the step's totals. At the end it prints each step's report; the reports are
# qualify.json in each step's directory.
#
# It needs a quiet machine: anything else running on it, even on the other core, moves the
# blocks (bench/README.md, "Paired runs beside a compiler").
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${STEPS:-"slow-aa slow-p99 slow-cap fast"}
# The series: the defaults changed what every step measures at 226464b (the ramp starts at 25%),
# so its runs are kept apart from the earlier ones (bench/results/paired-goals/<step>/, with the
# ramp from 10%), which no longer pool.
series=${SERIES:-ramp25}
root=target/loadgate/paired-goals/$series
kept=bench/results/paired-goals/$series
commit=$(git rev-parse --short=12 HEAD)

if [ "${1:-}" = keep ]; then
  for src in $(for s in $steps; do ls -d "$root/$s"/*/ 2>/dev/null; done); do
    src=${src%/}
    s=$(basename "$(dirname "$src")")
    [ -f "$src/qualify-series.json" ] || continue
    if [ "$(jq -r .dirty "$src/qualify-series.json")" = true ]; then
      echo "$s: made from a dirty tree, not kept (no commit names it)" >&2
      continue
    fi
    made=$(jq -r '.commit[0:12]' "$src/qualify-series.json")
    dst="$kept/$s/$made"
    mkdir -p "$dst"
    cp "$src/qualify-series.json" "$dst/"
    n=0
    for run in "$src"/*/qualify-run.json; do
      [ -f "$run" ] || continue
      name=$(basename "$(dirname "$run")")
      mkdir -p "$dst/$name"
      cp "$run" "$dst/$name/"
      result="$(dirname "$run")/result.json"
      if [ -f "$result" ]; then
        jq '{config_hash: .config_hash, commit: .git.commit, design: .paired.design, pairs: .paired.pairs,
             blocks: [.paired.blocks[]? | {pair, side, p50_ms: .total.p50_ms, p99_ms: .total.p99_ms,
                                           requests: .total.requests}],
             metrics: [.comparison.metrics[]? | select(.operation == null)
                       | {metric, estimate, low, high, detectable, outcome}]}' \
          "$result" > "$dst/$name/pairs.json"
      fi
      n=$((n + 1))
    done
    echo "$s: kept $n run(s) of commit $made in $dst"
  done
  exit 0
fi

cargo build --release -p cargo-loadgate -p demo-service --quiet
bin=target/release/cargo-loadgate

# The runs of step $1 and kind $2 (a-a or injected) kept from other commits.
pooled() {
  local n=0 d
  for d in "$kept/$1"/*/; do
    [ -d "$d" ] && [ "$(basename "$d")" != "$commit" ] || continue
    # Runs that ended in an error (no verdict after exit 1 or 20, a signal, an unreadable result)
    # measured nothing: `qualify --pool` leaves them out, so they are not counted here either.
    n=$((n + $(find "$d" -name qualify-run.json -exec jq -r 'select(.outcome != null or
        (.unreadable == null and .exit_code != null and .exit_code != 1 and .exit_code != 20))
        | .kind' {} + | grep -cx "$2" || true)))
  done
  echo "$n"
}

# step NAME AA INJECTED ARGS...: makes the runs missing from AA A/A and INJECTED injected runs
# after pooling the kept series of other commits.
step() {
  local name=$1 aa=$2 injected=$3
  shift 3
  local out="$root/$name/$commit" pools=() d
  for d in "$kept/$name"/*/; do
    [ -d "$d" ] && [ "$(basename "$d")" != "$commit" ] && pools+=(--pool "$d")
  done
  aa=$((aa - $(pooled "$name" a-a)))
  injected=$((injected - $(pooled "$name" injected)))
  [ "$aa" -gt 0 ] || aa=0
  [ "$injected" -gt 0 ] || injected=0
  [ -z "${AA:-}" ] || [ "$aa" -le "$AA" ] || aa=$AA
  [ -z "${INJECTED:-}" ] || [ "$injected" -le "$INJECTED" ] || injected=$INJECTED
  mkdir -p "$out"
  echo "=== $name: $* ($((${#pools[@]} / 2)) kept series pooled; making $aa A/A and $injected injected run(s))"
  # Each run is bounded by the gate's own [abort] max-duration; this bounds the whole step.
  timeout 43200 "$bin" loadgate qualify -p demo-service --paired --resume --out-dir "$out" \
    --json "$out/qualify.json" --aa-runs "$aa" --runs "$injected" ${pools[@]+"${pools[@]}"} "$@" 2>&1 |
    tee -a "$out/qualify.log"
}

slow=(--profile paired-1ms --env DEMO_CPU_US=1000)
fast=(--profile paired-fast)
for s in $steps; do
  case "$s" in
    slow-aa) step slow-aa 20 10 "${slow[@]}" --inject DEMO_CPU_US=1080 ;;
    slow-p99) step slow-p99 0 10 "${slow[@]}" --inject DEMO_CPU_US=1100 ;;
    slow-cap) step slow-cap 0 10 "${slow[@]}" --inject DEMO_CPU_US=1250 ;;
    fast) step fast 10 10 "${fast[@]}" --inject DEMO_CPU_US=200 ;;
    *) echo "unknown step $s (slow-aa slow-p99 slow-cap fast)" >&2; exit 2 ;;
  esac
done

echo
for s in $steps; do
  f="$root/$s/$commit/qualify.json"
  [ -f "$f" ] || continue
  echo "=== $s ($f)"
  jq -r '"A/A: \(.aa.pass) pass, \(.aa.regression) regression, \(.aa.inconclusive) inconclusive, \(.aa.no_verdict) no verdict",
         (if .detection_rate then "detected: \(.detection_rate.hits)/\(.detection_rate.of) (\(.injected.inconclusive) inconclusive, \(.injected.no_verdict) no verdict)" else empty end),
         (if .capacity then "capacity regressions: A/A \(.capacity.false_regression_rate.hits)/\(.capacity.false_regression_rate.of)" + (if .capacity.detection_rate then ", injected \(.capacity.detection_rate.hits)/\(.capacity.detection_rate.of)" else "" end) else empty end),
         (if .detectable then "median detectable (A/A): p50 \(.detectable.p50.median // "none"), p99 \(.detectable.p99.median // "none")" else empty end),
         "median run: \([.runs[].seconds] | sort | .[length/2|floor] | floor) s"' "$f"
done
