#!/usr/bin/env bash
# The post-run audit's goal (issue 15): the demo's duplicate-effects bug is caught in N of N runs
# of `--profile audit` (retries on, DEMO_FAIL_AFTER_COMMIT=0.2, the ledger audit), and a service
# without the bug is never failed. Runs the audit profile N times with DEMO_DUPLICATE_EFFECTS=1 and
# N times without, alternating, each against a fresh demo process, and prints one line per run
# (exit code, audit status, the ledger's duplicates and effects against the logical transfers,
# attempts per logical transfer) and the tally. A script a person runs, not a timed test.
#
# Usage: bench/audit.sh N [extra run arguments...]
#   e.g. bench/audit.sh 10
# Env:   BIN=target/release/cargo-loadgate
# Every run is bounded by the `audit` profile's durations (the `quick` ramp and soak, about 30 s of
# load) and its [abort] limits; load goes to 127.0.0.1 only (a process target).
set -euo pipefail
n=${1:?usage: bench/audit.sh N [extra run arguments...]}; shift
BIN=${BIN:-target/release/cargo-loadgate}
WORK=$(mktemp -d /tmp/loadgate-audit.XXXXXX)
command -v jq > /dev/null || { echo "needs jq (apt-get install -y jq)" >&2; exit 1; }
[ -x "$BIN" ] || { echo "build first: cargo build --release -p cargo-loadgate" >&2; exit 1; }
echo "runs in $WORK"

line() { # result.json -> the audit's terms
  jq -r '(.audits[0] // {}) as $a
    | ([.phases[].operations[] | select(.name == "transfer") | .tally] | map(.logical) | add) as $l
    | ([.phases[].operations[] | select(.name == "transfer") | .tally] | map(.attempts) | add) as $t
    | "audit \($a.status // "missing"): duplicates \($a.checks[0].answer // "?"), effects \($a.checks[2].answer // "?") of \($l // "?") logical transfers, \(if $l then ($t / $l * 100 | round / 100) else "?" end) attempts each"' "$1"
}

caught=0 false_failures=0 other=0
for i in $(seq 1 "$n"); do
  for bug in 1 0; do
    name=$([ "$bug" = 1 ] && echo "bug-$i" || echo "clean-$i")
    env_args=()
    [ "$bug" = 1 ] && env_args=(--env DEMO_DUPLICATE_EFFECTS=1)
    set +e
    "$BIN" loadgate run -p demo-service --profile audit --target process \
      "${env_args[@]}" --out-dir "$WORK/$name" "$@" > "$WORK/$name.log" 2>&1
    code=$?
    set -e
    status=$(jq -r '.audits[0].status // "missing"' "$WORK/$name/result.json" 2>/dev/null || echo missing)
    if [ "$bug" = 1 ] && [ "$code" = 10 ] && [ "$status" = failed ]; then
      caught=$((caught + 1))
    elif [ "$bug" = 0 ] && [ "$status" != passed ]; then
      false_failures=$((false_failures + 1))
    elif [ "$bug" = 0 ] && [ "$code" = 0 ]; then
      :
    else
      other=$((other + 1))
    fi
    echo "$name: exit $code: $(line "$WORK/$name/result.json" 2>/dev/null || echo 'no result')"
  done
done
echo "bug caught in $caught of $n runs; false failures without the bug: $false_failures of $n; other outcomes: $other"
