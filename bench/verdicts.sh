#!/usr/bin/env bash
# The gate's verdicts against one stored baseline: saves a baseline of the package with PROFILE,
# then runs the gate N times with the service's environment changed by KNOB (KEY=VALUE, or "none"
# for A/A runs), and prints one line per run (exit code, verdict, the rule that fired, the ramp's
# sentence) and a tally of the exit codes. It is a script a person runs to check the goals of
# issue 12 (attribution, confirmed breaks) on their machine, not a timed test.
#
# Usage: bench/verdicts.sh PACKAGE PROFILE N KNOB [extra run arguments...]
#   e.g. bench/verdicts.sh demo-service ci 10 DEMO_CPU_US=20000
#        bench/verdicts.sh demo-service ci-cap40 10 DEMO_CPU_US=20000
#        bench/verdicts.sh demo-service ci 10 none           # A/A
# Env:   STORE=dir:/tmp/...   where the baseline goes (default: a fresh temp dir, never your notes)
#        SAVE=0               reuse the baseline already in STORE instead of saving a new one
#        BIN=target/release/cargo-loadgate
# Every run is bounded by its profile's durations and [abort] limits; load goes to 127.0.0.1 only.
set -euo pipefail
pkg=$1 profile=$2 n=$3 knob=$4; shift 4
BIN=${BIN:-target/release/cargo-loadgate}
WORK=$(mktemp -d /tmp/loadgate-verdicts.XXXXXX)
STORE=${STORE:-dir:$WORK/store}
SAVE=${SAVE:-1}
command -v jq > /dev/null || { echo "needs jq (apt-get install -y jq)" >&2; exit 1; }
[ -x "$BIN" ] || { echo "build first: cargo build --release -p cargo-loadgate" >&2; exit 1; }
echo "runs in $WORK, baselines in $STORE"

summary() { # result.json -> one line (and, with a postgres probe, its blocks per commit and top statement)
  jq -r '[.verdict.outcome // "none", (.verdict.rule_fired // "" | .[0:160]), (.ramp.sentence // "" | .[0:160])]
    + [.probes[]? | select(.totals.xact_commit? > 0)
       | "probe \(.name): \(((.totals.blks_hit + .totals.blks_read) / .totals.xact_commit) | floor) blocks/commit"
         + (if .statements[0]? then "; top statement \(.statements[0].blocks_per_call | floor) blocks/call × \(.statements[0].calls): \(.statements[0].query[0:70])" else "" end)]
    | join(" | ")' "$1"
}

if [ "$SAVE" = 1 ]; then
  "$BIN" loadgate run -p "$pkg" --profile "$profile" --baseline-store "$STORE" --save-baseline \
    --out-dir "$WORK/base" "$@" > "$WORK/base.log" 2>&1 || true
  echo "base: $(summary "$WORK/base/result.json")"
fi

declare -A tally=()
for i in $(seq 1 "$n"); do
  env_args=()
  [ "$knob" != none ] && env_args=(--env "$knob")
  set +e
  "$BIN" loadgate run -p "$pkg" --profile "$profile" --baseline-store "$STORE" \
    "${env_args[@]}" --out-dir "$WORK/run-$i" "$@" > "$WORK/run-$i.log" 2>&1
  code=$?
  set -e
  tally[$code]=$(( ${tally[$code]:-0} + 1 ))
  echo "run $i: exit $code: $(summary "$WORK/run-$i/result.json")"
done
printf 'exit codes:'
for code in "${!tally[@]}"; do printf ' %s×%s' "${tally[$code]}" "$code"; done
printf ' (of %s)\n' "$n"
