#!/usr/bin/env bash
# Issue 18's history goal on real stored runs: 10 commits of the demo, a knob flipped at the 6th,
# and `cargo loadgate history` must find the step.
#
#   bench/history-demo.sh PACKAGE PROFILE COMMITS FLIP KNOB
#   e.g. bench/history-demo.sh demo-service ci 10 6 DEMO_CPU_US=1000
#
# In a throwaway clone of this repository (never your branch or your notes), it makes COMMITS
# empty commits and saves a baseline of PACKAGE with PROFILE at each into a temporary `dir:` store,
# the service's environment changed by KNOB (KEY=VALUE) from commit FLIP on. Then it runs
# `cargo loadgate history` over those commits and prints its listing and its change points, and
# checks that one of them lies at commit FLIP (exit 0) or says it was not found (exit 1).
#
# A run the tool does not store (an invalid phase: on a busy machine, the generator starved) is run
# again at its commit, up to ATTEMPTS (3) times in all, so the history has a result per commit.
# PHASES="save fill history" (the default) picks the parts to run; with WORK=<an earlier run's dir>
# and PHASES="fill history" the missing saves are tried again and the history read from the store. BIN=<a cargo-loadgate
# binary> uses that binary instead of building the release binary in the clone (which copies
# target/ first when this tree has one).
#
# Every run is bounded by its profile's durations and [abort] limits and by `timeout`; load goes
# to 127.0.0.1 only. Run it on a quiet machine: other work beside it is noise the runs record.
set -euo pipefail
pkg=${1:?PACKAGE} profile=${2:?PROFILE} commits=${3:?COMMITS} flip=${4:?FLIP} knob=${5:?KNOB}
command -v jq > /dev/null || { echo "needs jq (apt-get install -y jq)" >&2; exit 1; }
src=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
WORK=${WORK:-$(mktemp -d /tmp/loadgate-history.XXXXXX)}
repo=$WORK/repo
STORE=dir:$WORK/store
PHASES=${PHASES:-save fill history}
has() { case " $PHASES " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
echo "runs in $WORK, baselines in $STORE"
if [ ! -d "$repo" ]; then
  git clone -q "$src" "$repo"
  [ -z "${BIN:-}" ] && [ -d "$src/target" ] && cp -a "$src/target" "$repo/target"
fi
cd "$repo"
git config user.email history@loadgate.invalid
git config user.name "history demo"
if [ -z "${BIN:-}" ]; then
  cargo build --release -p cargo-loadgate --quiet
  BIN=$repo/target/release/cargo-loadgate
fi

saved() { [ -f "$WORK/store/$(cat "$WORK/commit-$1").json" ]; }
save() { # i: run commit i (checked out) with the knob from FLIP on, and store it
  local i=$1 extra=() code
  [ "$i" -ge "$flip" ] && extra=(--env "$knob")
  set +e
  timeout --foreground 900 "$BIN" loadgate run -p "$pkg" --profile "$profile" --mode stored \
    --base-ref HEAD --baseline-store "$STORE" --out-dir "$WORK/save-$i" --save-baseline \
    "${extra[@]}" > "$WORK/save-$i.log" 2>&1
  code=$?
  set -e
  echo "save $i at $(git rev-parse --short HEAD) ${extra[*]:-(no knob)}: exit $code, $(saved "$i" && echo stored || echo "NOT stored: $(grep -o 'not saving this run as a baseline: [^(]*' "$WORK/save-$i.log" | head -1)")"
}

has save && for i in $(seq 1 "$commits"); do
  git commit -q --allow-empty -m "history $i"
  git rev-parse HEAD > "$WORK/commit-$i"
  save "$i"
done

# A run is not stored when the machine starved the generator (an invalid phase): on a busy machine
# run such commits again, checked out, up to ATTEMPTS times in all.
if has fill; then
  tip=$(git rev-parse HEAD)
  for attempt in $(seq 2 "${ATTEMPTS:-3}"); do
    for i in $(seq 1 "$commits"); do
      saved "$i" && continue
      git checkout -q "$(cat "$WORK/commit-$i")"
      echo -n "attempt $attempt: "
      save "$i"
    done
  done
  git checkout -q "$tip"
fi

if has history; then
  first=$(cat "$WORK/commit-1")
  set +e
  "$BIN" loadgate history -p "$pkg" --profile "$profile" --baseline-store "$STORE" \
    --since "$first" --out-dir "$WORK/history"
  code=$?
  set -e
  echo "history: exit $code"
  flipped=$(cat "$WORK/commit-$flip")
  echo "--- change points (the knob was flipped at $(git rev-parse --short "$flipped"))"
  jq -r '.metrics[] | .change_points[] | .sentence' "$WORK/history/history.json"
  if jq -e --arg c "$flipped" \
    '[.metrics[] | select(.operation == null) | .change_points[] | select(.commit == $c)]
     | length > 0' \
    "$WORK/history/history.json" > /dev/null; then
    echo "found: a change point at commit $flip"
  else
    echo "NOT found: no change point of all operations at commit $flip"
    exit 1
  fi
fi
