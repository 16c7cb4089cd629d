#!/usr/bin/env bash
# Issue 13's whole goal series for paired mode, in resumable steps (about 70 paired `ci` gates of
# about five minutes each: some six hours of a quiet machine, more than one sitting).
#
#   bench/paired-goals.sh                 every step, in order
#   STEPS="slow-aa fast" bench/paired-goals.sh
#
# Steps (each a `qualify --paired --resume` in its own directory under target/loadgate/paired-goals/):
#   slow-aa    the demo with DEMO_CPU_US=1000 (p50 ≈ 1-2 ms), 20 A/A runs and 10 with
#              DEMO_CPU_US=1080 on the head (+8% CPU: about +15% p50 at 60% of the knee)
#   slow-p99   10 runs with DEMO_CPU_US=1100 on the head (+10% CPU: about +25% p99), no A/A runs
#   slow-cap   10 runs with DEMO_CPU_US=1250 on the head (capacity × 0.8), no A/A runs
#   fast       the demo without its knob at a few thousand req/s: 10 A/A runs and 10 with
#              DEMO_CPU_US=200 on the head (+0.2 ms per request)
#
# Every finished run is kept, so the command can be stopped (Ctrl-C cleans up the run in progress)
# and run again later at the same commit: it goes on where it stopped. A step whose settings or
# commit differ from the kept runs' is refused (exit 2) rather than pooled. At the end it prints
# each step's report; the reports are qualify.json in each step's directory.
#
# It needs a quiet machine: anything else running on it, even on the other core, moves the
# blocks (bench/README.md, "Paired runs beside a compiler").
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${STEPS:-"slow-aa slow-p99 slow-cap fast"}
root=target/loadgate/paired-goals
cargo build --release -p cargo-loadgate -p demo-service --quiet
bin=target/release/cargo-loadgate

step() {
  local name=$1
  shift
  local out="$root/$name"
  mkdir -p "$out"
  echo "=== $name: $*"
  # Each run is bounded by the gate's own [abort] max-duration; this bounds the whole step.
  timeout 43200 "$bin" loadgate qualify -p demo-service --paired --resume --out-dir "$out" \
    --json "$out/qualify.json" "$@" 2>&1 | tee -a "$out/qualify.log"
}

slow=(--profile paired-1ms --env DEMO_CPU_US=1000)
fast=(--profile paired-fast)
for s in $steps; do
  case "$s" in
    slow-aa) step slow-aa "${slow[@]}" --aa-runs 20 --runs 10 --inject DEMO_CPU_US=1080 ;;
    slow-p99) step slow-p99 "${slow[@]}" --aa-runs 0 --runs 10 --inject DEMO_CPU_US=1100 ;;
    slow-cap) step slow-cap "${slow[@]}" --aa-runs 0 --runs 10 --inject DEMO_CPU_US=1250 ;;
    fast) step fast "${fast[@]}" --aa-runs 10 --runs 10 --inject DEMO_CPU_US=200 ;;
    *) echo "unknown step $s (slow-aa slow-p99 slow-cap fast)" >&2; exit 2 ;;
  esac
done

echo
for s in $steps; do
  f="$root/$s/qualify.json"
  [ -f "$f" ] || continue
  echo "=== $s ($f)"
  jq -r '"A/A: \(.aa.pass) pass, \(.aa.regression) regression, \(.aa.inconclusive) inconclusive, \(.aa.no_verdict) no verdict",
         (if .detection_rate then "detected: \(.detection_rate.hits)/\(.detection_rate.of) (\(.injected.inconclusive) inconclusive, \(.injected.no_verdict) no verdict)" else empty end),
         (if .capacity then "capacity regressions: A/A \(.capacity.false_regression_rate.hits)/\(.capacity.false_regression_rate.of)" + (if .capacity.detection_rate then ", injected \(.capacity.detection_rate.hits)/\(.capacity.detection_rate.of)" else "" end) else empty end),
         (if .detectable then "median detectable (A/A): p50 \(.detectable.p50.median // "none"), p99 \(.detectable.p99.median // "none")" else empty end),
         "median run: \([.runs[].seconds] | sort | .[length/2|floor] | floor) s"' "$f"
done
