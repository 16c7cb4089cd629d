#!/usr/bin/env bash
# Stress then recover (issue 15): the demo's `stress` profile says "recovered" of the demo as it
# is, and "lasting harm" (exit 10) with DEMO_OVERLOAD_HARM=1, whose backlog leaves every later
# request 1 ms of CPU slower. Runs the profile N times without the knob and N times with it,
# alternating, each on a fresh boot, and prints one line per run (exit code, the stress's
# conclusion, the p50 and p99 change after the overload with their intervals, the time to stable
# SLO) and the tally. A script a person runs, not a timed test.
#
# Usage: bench/stress.sh N [extra run arguments...]
#   e.g. bench/stress.sh 10            (about 70 s a run)
# Env:   BIN=target/release/cargo-loadgate
# Every run is bounded by the profile's durations (the `quick` ramp and soak, then 40 s of the
# stress phase) and its [abort] limits; load goes to 127.0.0.1 only (a container on the host's
# network, or a process when no Docker engine answers).
set -euo pipefail
n=${1:?usage: bench/stress.sh N [extra run arguments...]}; shift
BIN=${BIN:-target/release/cargo-loadgate}
WORK=$(mktemp -d /tmp/loadgate-stress.XXXXXX)
command -v jq > /dev/null || { echo "needs jq (apt-get install -y jq)" >&2; exit 1; }
[ -x "$BIN" ] || { echo "build first: cargo build --release -p cargo-loadgate" >&2; exit 1; }
echo "runs in $WORK"

line() { # result.json -> the stress's conclusion and figures
  jq -r '.stress as $s | if $s == null then "no stress: \(.stress_skipped // "none")" else
    ($s.changes | map({(.metric): .}) | add) as $c
    | def pct(x): if x == null then "?" else ((x - 1) * 1000 | round / 10 | tostring) + "%" end;
      "\($s.harm): p50 \(pct($c.p50.estimate)) (\(pct($c.p50.low)) … \(pct($c.p50.high))), p99 \(pct($c.p99.estimate)) (\(pct($c.p99.low)) … \(pct($c.p99.high))), \($s.recovery.state) \((($s.recovery.after_ms // $s.recovery.observed_ms) / 1000))s"
    end' "$1"
}

recovered=0 harmed=0 false_harm=0 missed=0
for i in $(seq 1 "$n"); do
  for knob in 0 1; do
    name=$([ "$knob" = 1 ] && echo "harm-$i" || echo "plain-$i")
    env_args=()
    [ "$knob" = 1 ] && env_args=(--env DEMO_OVERLOAD_HARM=1)
    set +e
    "$BIN" loadgate run -p demo-service --profile stress "${env_args[@]}" \
      --out-dir "$WORK/$name" "$@" > "$WORK/$name.log" 2>&1
    code=$?
    set -e
    harm=$(jq -r '.stress.harm // "missing"' "$WORK/$name/result.json" 2>/dev/null || echo missing)
    case "$knob:$harm" in
      0:recovered) recovered=$((recovered + 1)) ;;
      0:lasting-harm) false_harm=$((false_harm + 1)) ;;
      1:lasting-harm) [ "$code" = 10 ] && harmed=$((harmed + 1)) || missed=$((missed + 1)) ;;
      1:*) missed=$((missed + 1)) ;;
    esac
    echo "$name: exit $code: $(line "$WORK/$name/result.json" 2>/dev/null || echo 'no result')"
  done
done
echo "without the knob: recovered in $recovered of $n, lasting harm (false) in $false_harm"
echo "with DEMO_OVERLOAD_HARM=1: lasting harm (exit 10) in $harmed of $n, missed in $missed"
