#!/usr/bin/env bash
# Issue 13's goals for paired mode, measured by `qualify --paired` on this machine.
#
#   bench/paired-qualify.sh slow RUNS INJECT   the demo with DEMO_CPU_US=1000 (p50 ≈ 1 ms), profile
#                                              paired-1ms; INJECT e.g. DEMO_CPU_US=1150 (+15% p50)
#   bench/paired-qualify.sh fast RUNS INJECT   the demo without its knob (p50 ≈ 0.1 ms) at a few
#                                              thousand req/s; INJECT e.g. DEMO_CPU_US=200 (+0.2 ms)
#
# Each run is a whole paired `ci` gate (about 4–5 minutes): RUNS A/A runs, then RUNS runs with the
# knob on the head side only. The report and qualify.json go to target/loadgate/paired-qualify-*/.
# Run it from a clean clone on a quiet machine; it ends by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:?slow or fast}
runs=${2:-10}
inject=${3:?KEY=VALUE}
out="target/loadgate/paired-qualify-$kind-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
cargo build --release -p cargo-loadgate -p demo-service --quiet
case "$kind" in
  slow) args=(--profile paired-1ms --env DEMO_CPU_US=1000) ;;
  fast) args=(--profile paired-fast) ;;
  *) echo "unknown kind $kind (slow or fast)" >&2; exit 2 ;;
esac
timeout $((runs * 2 * 600 + 600)) target/release/cargo-loadgate loadgate qualify -p demo-service \
  --paired --runs "$runs" --inject "$inject" "${args[@]}" \
  --out-dir "$out" --json "$out/qualify.json" 2>&1 | tee "$out/qualify.log"
