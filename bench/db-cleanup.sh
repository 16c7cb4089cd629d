#!/usr/bin/env bash
# Issue 16's "boot to teardown" goal: `cargo loadgate run -p demo-service --profile db` boots
# PostgreSQL (a process as the demo's config says; a container in the container modes), seeds its
# tier, boots the demo (a container, or a process with `--target process`), runs, and leaves no
# container, process or data directory behind: on success, on failure, and on SIGINT and SIGTERM
# at random moments. N runs of each, one line per run, and the tally; exit 1 when any run left
# something behind. A script a person runs, not a timed test. Every mode but `process` needs a
# Docker engine; the container modes need PostgreSQL's server package too (to pack its image).
#
# Usage: bench/db-cleanup.sh N [MODES...]
#   e.g. bench/db-cleanup.sh 10
#   MODES (default all): success failure sigint sigterm process container container-sig
#     success  the profile as written                       (exit 0, or 21 on a starved machine)
#     failure  the demo handed a closed database port        (exit 20)
#     sigint   SIGINT at a random moment of the run           (exit 130, or 0 when it ended first)
#     sigterm  SIGTERM at a random moment of the run          (exit 143, or 0 when it ended first)
#     process  the profile with --target process (no Docker) (exit 0, or 21)
#     container      the profile with PostgreSQL as a container (the image that
#                    fixtures/postgres-image/build.sh packs), the demo a container too (exit 0, or 21)
#     container-sig  the same, SIGINT or SIGTERM (alternating) at a random moment
# Env:   BIN=target/release/cargo-loadgate  MAX_DELAY=20 (seconds; the signal comes 1..MAX_DELAY s in,
#        and a run of the profile takes about 20 s)
# Every run is bounded by the `db` profile's durations (the `quick` ramp and soak) and its [abort]
# limits; load goes to 127.0.0.1 only. Exit 1 when a run left something behind or ended with an
# exit code its mode does not expect.
set -euo pipefail
n=${1:?usage: bench/db-cleanup.sh N [success failure sigint sigterm process container container-sig]}; shift
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(success failure sigint sigterm process container container-sig)
BIN=${BIN:-target/release/cargo-loadgate}
MAX_DELAY=${MAX_DELAY:-20}
[ -x "$BIN" ] || { echo "build first: cargo build --release -p cargo-loadgate -p demo-service" >&2; exit 1; }
command -v initdb > /dev/null || ls /usr/lib/postgresql/*/bin/initdb > /dev/null 2>&1 ||
  { echo "needs PostgreSQL's server binaries (apt-get install -y postgresql)" >&2; exit 1; }
WORK=$(mktemp -d /tmp/loadgate-db-cleanup.XXXXXX)
echo "runs in $WORK"
# The container modes: the demo's config with the dependency's `kind = "process"` replaced by the
# packed image, beside the original (its SQL files are named relative to it), removed at the end.
container_config=fixtures/demo-service/.db-cleanup-container.toml
case " ${modes[*]} " in
  *" container"*)
    image=$(fixtures/postgres-image/build.sh)
    trap 'rm -f "$container_config"' EXIT
    sed "s|^kind = \"process\" .*|image = \"$image\"|" fixtures/demo-service/loadgate.toml > "$container_config"
    grep -q "^image = \"$image\"" "$container_config" ||
      { echo "the demo's dependency is no longer written as this script expects" >&2; exit 1; }
    ;;
esac

# What run `$1` (its loadgate pid `$2`, its run id `$3`) left: PostgreSQL processes and data
# directories named after the pid, containers labelled with the run id, and any process whose
# environment holds the run id (every child of loadgate inherits LOADGATE_RUN_ID: the demo, psql,
# a data or teardown step). Empty when nothing.
leftovers() {
  local pid=$1 id=$2 out=$3 left=()
  local dirs
  dirs=$(find "${TMPDIR:-/tmp}" -maxdepth 1 -name "loadgate-db-$pid-*" 2>/dev/null | wc -l)
  [ "$dirs" = 0 ] || left+=("$dirs data dir(s)")
  local procs=0 p
  for p in /proc/[0-9]*; do
    [ -r "$p/cmdline" ] || continue
    # (2> before <: a process that ended meanwhile, or a kernel thread, is no error)
    if tr '\0' ' ' 2>/dev/null < "$p/cmdline" | grep -qF -e "loadgate-db-$pid-" -e "$out" ||
      tr '\0' '\n' 2>/dev/null < "$p/environ" | grep -qxF "LOADGATE_RUN_ID=$id"; then
      [ "$(awk '{print $3}' "$p/stat" 2>/dev/null)" = Z ] || procs=$((procs + 1))
    fi
  done
  [ "$procs" = 0 ] || left+=("$procs process(es)")
  if command -v docker > /dev/null && docker info > /dev/null 2>&1; then
    local containers
    containers=$(docker ps -aq --filter "label=loadgate.run=$id" | wc -l)
    [ "$containers" = 0 ] || left+=("$containers container(s)")
  fi
  local IFS=,
  echo "${left[*]}"
}

clean=0 dirty=0 unexpected=0
for mode in "${modes[@]}"; do
  for i in $(seq 1 "$n"); do
    name="$mode-$i"
    out="$WORK/$name"
    id="dbclean-$$-$name"
    args=(loadgate run -p demo-service --profile db --out-dir "$out")
    expect="0 21"
    delay=""
    case "$mode" in
      success) ;;
      failure)
        closed=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        args+=(--env "DATABASE_URL=postgres://postgres@127.0.0.1:$closed/postgres")
        expect="20" ;;
      sigint | sigterm)
        delay=$((RANDOM % MAX_DELAY + 1))
        expect=$([ "$mode" = sigint ] && echo "130 0 21" || echo "143 0 21") ;;
      process) args+=(--target process) ;;
      container) args+=(--target container --config "$container_config") ;;
      container-sig)
        args+=(--target container --config "$container_config")
        delay=$((RANDOM % MAX_DELAY + 1))
        sig=$([ $((i % 2)) = 0 ] && echo INT || echo TERM)
        expect=$([ "$sig" = INT ] && echo "130 0 21" || echo "143 0 21") ;;
      *) echo "unknown mode $mode" >&2; exit 2 ;;
    esac
    set +e
    LOADGATE_RUN_ID=$id "$BIN" "${args[@]}" > "$out.log" 2>&1 &
    pid=$!
    if [ -n "$delay" ]; then
      waited=0
      while [ "$waited" -lt "$delay" ] && kill -0 "$pid" 2> /dev/null; do
        sleep 1
        waited=$((waited + 1))
      done
      case "$mode" in
        container-sig) signal=$sig ;;
        *) signal=${mode#sig} ;;
      esac
      kill -0 "$pid" 2> /dev/null && kill "-$signal" "$pid"
    fi
    wait "$pid"
    code=$?
    set -e
    left=$(leftovers "$pid" "$id" "$out")
    # A process killed a moment ago may still be going: look once more a second later.
    [ -z "$left" ] || { sleep 1; left=$(leftovers "$pid" "$id" "$out"); }
    verdict=ok
    if [ -n "$left" ]; then
      verdict="LEFT: $left"
      dirty=$((dirty + 1))
    else
      clean=$((clean + 1))
    fi
    case " $expect " in *" $code "*) ;; *) verdict="$verdict; UNEXPECTED exit"; unexpected=$((unexpected + 1)) ;; esac
    printf '%-10s exit %-3s %-14s %s\n' "$name" "$code" "${delay:+signal at ${delay}s}" "$verdict"
  done
done
echo "clean $clean, left something $dirty, unexpected exit $unexpected (logs in $WORK)"
[ "$dirty" = 0 ] && [ "$unexpected" = 0 ]
