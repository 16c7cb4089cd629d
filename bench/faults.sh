#!/usr/bin/env bash
# A stub fault in the soak (issue 15): the demo's `faults` profile slows the fraud check its
# transfers ask of a loadgate stub by 300 ms, 10 s into the soak's measured part, for 10 s. The
# demo keeps no backlog, so the truth is that it is stable again in the first window after the
# removal. Runs the profile N times, each on a fresh boot, and prints one line per run (exit code,
# whether the fault was verified, when it was applied and removed on the phase's clock, the least
# delay the stub served under it, the worst soak window's p99 while it held, the time to stable SLO
# after it) and the tally. A script a person runs, not a timed test.
#
# Usage: bench/faults.sh N [extra run arguments...]
#   e.g. bench/faults.sh 10            (about 50 s a run)
# Env:   BIN=target/release/cargo-loadgate
# Every run is bounded by the profile's durations (the `quick` ramp, a 30 s soak) and its [abort]
# limits; load goes to 127.0.0.1 only (the demo and the stub on loopback).
set -euo pipefail
n=${1:?usage: bench/faults.sh N [extra run arguments...]}; shift
BIN=${BIN:-target/release/cargo-loadgate}
WORK=$(mktemp -d /tmp/loadgate-faults.XXXXXX)
command -v jq > /dev/null || { echo "needs jq (apt-get install -y jq)" >&2; exit 1; }
[ -x "$BIN" ] || { echo "build first: cargo build --release -p cargo-loadgate" >&2; exit 1; }
echo "runs in $WORK"

line() { # result.json -> the fault's figures
  jq -r '.faults[0] as $f | if $f == null then "no fault" else
    ([.phases[] | select(.name == "soak") | .windows.windows[]
      | select(.start_ms >= ($f.applied_at_ms // 0) and .start_ms < ($f.removed_at_ms // 0) - 1000)
      | .p99_ms] | max) as $burst
    | "verified \($f.verified)\(if $f.problem then " (\($f.problem))" else "" end), applied \(($f.applied_at_ms // 0) | round) ms, removed \(($f.removed_at_ms // 0) | round) ms, least delay under it \($f.during.delay_min_ms // "?") ms, worst window p99 while it held \($burst // "?") ms, \($f.recovery.state // "no recovery") \((($f.recovery.after_ms // $f.recovery.observed_ms // 0) / 1000)) s"
    end' "$1"
}

verified=0 within=0
for i in $(seq 1 "$n"); do
  name="faults-$i"
  set +e
  "$BIN" loadgate run -p demo-service --profile faults --out-dir "$WORK/$name" "$@" \
    > "$WORK/$name.log" 2>&1
  code=$?
  set -e
  r="$WORK/$name/result.json"
  [ "$(jq -r '.faults[0].verified // false' "$r" 2>/dev/null)" = true ] && verified=$((verified + 1))
  after=$(jq -r '.faults[0].recovery.after_ms // empty' "$r" 2>/dev/null || true)
  [ -n "$after" ] && awk -v a="$after" 'BEGIN { exit !(a <= 1000) }' && within=$((within + 1))
  echo "$name: exit $code: $(line "$r" 2>/dev/null || echo 'no result')"
done
echo "verified in $verified of $n; stable within one window (1 s) of the removal in $within of $n"
