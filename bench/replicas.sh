#!/usr/bin/env bash
# Replicas with client-side failover (issue 15, seed 003), in containers (each replica limited to
# 0.4 CPU, so that one replica's capacity is half of two's; as processes both share one core).
# Each round runs the demo's two profiles, each on a fresh boot:
#   replicas       two replicas: the ramp's capacity with both, then replica 1 killed 10 s into the
#                  soak and booted again 10 s later (the failover window, errors, recovery);
#   replicas-ramp  the same with replica 1 killed through the whole ramp: the capacity with one.
# Prints one line per run and, per round, the ratio of the two capacities (the goal: within ±15%
# of one half). A script a person runs, not a timed test.
#
# Usage: bench/replicas.sh N [extra run arguments...]
#   e.g. bench/replicas.sh 5            (about 2 minutes a round)
# Env:   BIN=target/release/cargo-loadgate
# Every run is bounded by the profile's durations and its [abort] limits; load goes to 127.0.0.1
# only (the containers are on the host's network, bound to loopback).
set -euo pipefail
n=${1:?usage: bench/replicas.sh N [extra run arguments...]}; shift
BIN=${BIN:-target/release/cargo-loadgate}
WORK=$(mktemp -d /tmp/loadgate-replicas.XXXXXX)
command -v jq > /dev/null || { echo "needs jq (apt-get install -y jq)" >&2; exit 1; }
[ -x "$BIN" ] || { echo "build first: cargo build --release -p cargo-loadgate" >&2; exit 1; }
echo "runs in $WORK"

fault() { # result.json -> the fault's figures
  jq -r '.faults[0] as $f | if $f == null then "no fault" else
    "fault \($f.name): verified \($f.verified)\(if $f.problem then " (\($f.problem))" else "" end), exited \((($f.replica.confirmed_at_ms // 0) - ($f.applied_at_ms // 0)) | round) ms after the kill, back \((($f.replica.back_at_ms // 0) - ($f.removed_at_ms // 0)) | round) ms after the restart, \($f.replica.failed) failed, \($f.replica.failovers) failed over, \($f.replica.errors) errors (window \($f.replica.failover_window_ms // "?") ms), \($f.replica.errors_elsewhere) elsewhere, \($f.recovery.state // "no recovery") \((($f.recovery.after_ms // 0) / 1000)) s"
    end' "$1"
}
knee() { jq -r '.ramp.knee_rate_per_sec // empty | round' "$1"; }

within=0 verified=0
for i in $(seq 1 "$n"); do
  declare -A cap=()
  for profile in replicas replicas-ramp; do
    name="$profile-$i"
    set +e
    "$BIN" loadgate run -p demo-service --profile "$profile" --target container \
      --out-dir "$WORK/$name" "$@" > "$WORK/$name.log" 2>&1
    code=$?
    set -e
    r="$WORK/$name/result.json"
    cap[$profile]=$(knee "$r" 2>/dev/null || true)
    [ "$(jq -r '.faults[0].verified // false' "$r" 2>/dev/null)" = true ] && verified=$((verified + 1))
    echo "$name: exit $code: capacity ${cap[$profile]:-?} req/s; $(fault "$r" 2>/dev/null || echo 'no result')"
  done
  if [ -n "${cap[replicas]:-}" ] && [ -n "${cap[replicas-ramp]:-}" ]; then
    ratio=$(awk -v a="${cap[replicas-ramp]}" -v b="${cap[replicas]}" 'BEGIN { printf "%.3f", a / b }')
    awk -v r="$ratio" 'BEGIN { exit !(r >= 0.425 && r <= 0.575) }' && within=$((within + 1))
    echo "round $i: one replica / two = $ratio"
  fi
  unset cap
done
echo "faults verified in $verified of $((2 * n)); capacity ratio within 0.5 ± 15% in $within of $n"
