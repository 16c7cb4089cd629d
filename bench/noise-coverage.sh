#!/usr/bin/env bash
# Issue 12's coverage goal for stored baselines whose noise comes from their history.
#
#   bench/noise-coverage.sh PACKAGE PROFILE HISTORY AA KNOB N
#   e.g. bench/noise-coverage.sh demo-service ci 6 20 DEMO_CPU_US=170 10
#
# In a throwaway clone of this repository (never your branch or your notes), it makes HISTORY empty
# commits and saves a baseline of PACKAGE with PROFILE at each into a temporary `dir:` store, so the
# last one is the baseline and the HISTORY − 1 before it are its stored first-parent history. Then,
# at that commit, it runs the gate AA times unchanged (A/A) and N times with the service's
# environment changed by KNOB (KEY=VALUE). For each run it prints the exit code, the noise source
# and how many runs it rests on, and for every primary metric whether the interval holds no change
# ("in") or not ("OUT" — for an A/A run that is a miss, regression and improvement alike), and
# tallies: A/A misses per metric, A/A passes, the KNOB runs called a regression, and the median
# smallest detectable change per metric.
#
# PHASES="save aa knob" (the default) picks the parts to run; with WORK=<an earlier run's dir> and
# PHASES="knob" the KNOB runs go on against the history saved before (the baseline's p50 tells
# which KNOB adds +50%).
#
# It builds the release binary in the clone (copying target/ first when this tree has one). Every
# run is bounded by its profile's durations and [abort] limits; load goes to 127.0.0.1 only. Run it
# on a quiet machine: a compile beside it is noise the history did not see.
set -euo pipefail
pkg=${1:?PACKAGE} profile=${2:?PROFILE} history=${3:?HISTORY} aa=${4:?AA} knob=${5:?KNOB} n=${6:?N}
command -v jq > /dev/null || { echo "needs jq (apt-get install -y jq)" >&2; exit 1; }
src=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
WORK=${WORK:-$(mktemp -d /tmp/loadgate-coverage.XXXXXX)}
repo=$WORK/repo
STORE=dir:$WORK/store
PHASES=${PHASES:-save aa knob}
has() { case " $PHASES " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
echo "runs in $WORK, baselines in $STORE"
if [ ! -d "$repo" ]; then
  git clone -q "$src" "$repo"
  [ -d "$src/target" ] && cp -a "$src/target" "$repo/target"
fi
cd "$repo"
git config user.email coverage@loadgate.invalid
git config user.name "noise coverage"
cargo build --release -p cargo-loadgate --quiet
BIN=$repo/target/release/cargo-loadgate
run() { # out-dir [extra args...]
  local out=$1; shift
  set +e
  timeout --foreground 900 "$BIN" loadgate run -p "$pkg" --profile "$profile" --mode stored --base-ref HEAD \
    --baseline-store "$STORE" --out-dir "$out" "$@" > "$out.log" 2>&1
  local code=$?
  set -e
  echo "$code"
}
line() { # result.json -> the noise source and each primary metric's interval against no change
  jq -r '
    def nochange: if .scale == "ratio" then 1 else 0 end;
    def side: if .low == null or .high == null then "?"
      elif (.low <= nochange and nochange <= .high) then "in" else "OUT" end;
    (.comparison.noise // {}) as $n
    | [ "noise \($n.source // "-")/\($n.history_runs // 0)",
        (.comparison.metrics // [] | map(select(.primary and .operation == null))
         | map("\(.metric) \(.outcome) \(side) det \(.detectable // "-" | tostring | .[0:6])")
         | join("; ")) ] | join(" | ")' "$1"
}

has save && for i in $(seq 1 "$history"); do
  git commit -q --allow-empty -m "history $i"
  code=$(run "$WORK/save-$i" --save-baseline)
  echo "save $i at $(git rev-parse --short HEAD): exit $code"
done

for kind in aa knob; do
  has "$kind" || continue
  count=$aa; extra=()
  [ "$kind" = knob ] && { count=$n; extra=(--env "$knob"); }
  for i in $(seq 1 "$count"); do
    out=$WORK/$kind-$i
    code=$(run "$out" "${extra[@]}")
    echo "$kind $i: exit $code | $( [ -f "$out/result.json" ] && line "$out/result.json")"
  done
done

echo "--- tally"
for kind in aa knob; do
  files=$(ls "$WORK"/$kind-*/result.json 2>/dev/null || true)
  [ -z "$files" ] && continue
  # shellcheck disable=SC2086
  jq -s -r --arg kind "$kind" '
    def nochange: if .scale == "ratio" then 1 else 0 end;
    def out: .low != null and .high != null and (.low > nochange or .high < nochange);
    def median: sort | if length == 0 then null else .[(length / 2 | floor)] end;
    [.[] | .comparison.metrics // [] | map(select(.primary and .operation == null))] as $runs
    | ($runs | map(.[]) | group_by(.metric)) as $by
    | "\($kind): \(length) runs; verdicts \([.[] | .verdict.outcome] | group_by(.) | map("\(.[0])×\(length)") | join(" "))",
      ($by[] | "  \(.[0].metric): outside no change \(map(select(out)) | length)/\(length); outcomes \(map(.outcome) | group_by(.) | map("\(.[0])×\(length)") | join(" ")); median detectable \(map(.detectable // empty) | median)")
  ' $files
done
