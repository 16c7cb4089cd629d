#!/usr/bin/env bash
# Round trip of `cargo loadgate model` (issue 17): drive the demo service with a known user model,
# let it write its access log, estimate the model from the log, and check that every probability
# of the known model lies in its 99% interval, every mean think time is within 10%, and the log
# validates against the known model. Both the demo's own config and model-b.toml, SEEDS seeds
# each; the two models run side by side (their loads go to two demos on 127.0.0.1).
#
#   bench/model-roundtrip.sh                 # 10 seeds, 400 sessions/s for 110 s per run
#   SEEDS=3 RATE=100 DURATION=60s bench/model-roundtrip.sh
#
# Sessions that start within two session gaps (2 × 30 s) of the log's end are left out by
# `model` (the attack cuts them), so a run of 110 s keeps about 50 s of sessions (≈ 20,000).
set -euo pipefail
cd "$(dirname "$0")/.."
SEEDS=${SEEDS:-10}
RATE=${RATE:-400}
DURATION=${DURATION:-110s}
GAP=${GAP:-30s}
OUT=${OUT:-/tmp/loadgate-model-roundtrip}
cargo build --release -q -p cargo-loadgate -p demo-service
BIN=target/release
mkdir -p "$OUT"

one() { # model-name config seed
  local name=$1 config=$2 seed=$3 dir="$OUT/$1-$3"
  rm -rf "$dir"; mkdir -p "$dir"
  PORT=0 DEMO_BIND=127.0.0.1 DEMO_ACCESS_LOG="$dir/access.log" "$BIN/demo-service" >"$dir/demo.out" 2>&1 &
  local pid=$!
  # This job's demo ends with the job, however the job ends (Ctrl-C, an error).
  trap 'kill -TERM "$pid" 2>/dev/null' EXIT INT TERM
  local port=""
  for _ in $(seq 50); do
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$dir/demo.out")
    [ -n "$port" ] && break
    sleep 0.1
  done
  "$BIN/cargo-loadgate" attack --config "$config" --url "http://127.0.0.1:$port" \
    --rate "$RATE" --duration "$DURATION" --seed "$seed" >"$dir/attack.out" 2>&1 || true
  kill -TERM "$pid"; wait "$pid" || true
  "$BIN/cargo-loadgate" model -p demo-service --config "$config" --from "$dir/access.log" \
    --session-gap "$GAP" --json >"$dir/model.json" 2>"$dir/model.err" || { echo "$name seed $seed: model failed: $(cat "$dir/model.err")"; return; }
  jq -r --arg name "$name" --arg seed "$seed" --arg bytes "$(stat -c %s "$dir/access.log")" '
    . as $r
    | ($r.config_comparison.all_probabilities_within) as $p
    | ($r.config_comparison.max_think_error) as $t
    | ($r.validations[1].within) as $v
    | "\($name) seed \($seed): \($r.scan.lines) lines, \($bytes) bytes, \($r.estimate.sessions) sessions kept (\($r.sessions.late) late, \($r.sessions.censored) cut); probabilities within: \($p); worst think error \($t * 1000 | round / 10)%; validation: \($v) => \(if $p and $t <= 0.10 and $v then "PASS" else "FAIL" end)"
    + (if $p then "" else "\n    outside: " + ([$r.config_comparison.probabilities[] | select(.within | not) | .what] | join(", ")) end)
    + (if $v then "" else "\n    " + ($r.validations[1].operations | map(select(.within | not) | .name) | join(", ")) end)
  ' "$dir/model.json" | tee "$dir/summary.txt"
  grep -E "pacing lag|INVALID" "$dir/attack.out" | sed 's/^/    attack: /' || true
}

# The running jobs (and, through their traps, their demos) end with the script.
trap 'kill $(jobs -p) 2>/dev/null; wait' EXIT INT TERM

for seed in $(seq 1 "$SEEDS"); do
  one demo fixtures/demo-service/loadgate.toml "$seed" &
  one model-b fixtures/demo-service/model-b.toml "$seed" &
  wait
done
echo
for name in demo model-b; do
  pass=$(cat "$OUT/$name"-*/summary.txt 2>/dev/null | grep -c "=> PASS" || true)
  echo "$name: $pass of $SEEDS seeds pass"
done
