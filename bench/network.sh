#!/usr/bin/env bash
# Issue 14's container-overhead goal: the same demo binary, answering the fast catalog route, as a
# plain process (what a `url` target measures), in a container on the host network, and in a
# container behind a port published on 127.0.0.1 (Docker's userland proxy), each pinned to
# $TARGET_CORE with one CPU, and `cargo loadgate attack` pinned to $GEN_CORE at each rate of
# RATES for DURATION. One table, all paths measured in one run, REPEAT times in turn.
#
#   bench/network.sh [REPEAT]      e.g. bench/network.sh 3
# Env: RATES="20000 40000"  DURATION=8s  TARGET_CORE=1  GEN_CORE=0  PATHS="process host published"
#      ROUTE=/catalog/items/sku-00042  CPUS=1 (the containers' --cpus; empty for none)
#
# The goal: on the host network a container reaches ≥ 0.9× the rate and ≤ 1.2× the p99 of the
# process at 20k and 40k req/s. Load goes to 127.0.0.1 only; every attack is bounded by DURATION;
# every container is labelled `loadgate=1` and removed at the end, every process ended by its PID.
set -euo pipefail
cd "$(dirname "$0")/.."
REPEAT=${1:-1}
RATES=${RATES:-20000 40000}
DURATION=${DURATION:-8s}
TARGET_CORE=${TARGET_CORE:-1}
GEN_CORE=${GEN_CORE:-0}
PATHS=${PATHS:-process host published}
ROUTE=${ROUTE:-/catalog/items/sku-00042}
CPUS=${CPUS-1}
limit=()
[ -n "$CPUS" ] && limit=(--cpus "$CPUS")
command -v jq > /dev/null || { echo "needs jq (apt-get install -y jq)" >&2; exit 1; }
command -v docker > /dev/null || { echo "needs docker" >&2; exit 1; }
command -v python3 > /dev/null || { echo "needs python3 (for a free port)" >&2; exit 1; }
WORK=$(mktemp -d /tmp/loadgate-network.XXXXXX)
echo "work in $WORK"

# The same static binary for the process and the image (the flags the image packer uses).
triple=$(rustc -vV | sed -n 's/^host: //p')
env "CARGO_TARGET_$(echo "$triple" | tr a-z- A-Z_)_RUSTFLAGS=-C target-feature=+crt-static" \
  cargo build --release --quiet -p demo-service --target "$triple"
cargo build --release --quiet -p cargo-loadgate
BIN=target/$triple/release/demo-service
LG=target/release/cargo-loadgate
cp "$BIN" "$WORK/demo-service"
printf 'FROM scratch\nCOPY demo-service /demo-service\nENTRYPOINT ["/demo-service"]\n' > "$WORK/Dockerfile"
IMAGE=loadgate-bench/network:$$
docker build -q --label loadgate=1 -t "$IMAGE" "$WORK" > /dev/null

PID="" CID=""
cleanup() {
  if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; fi
  if [ -n "$CID" ]; then docker rm -f "$CID" > /dev/null 2>&1 || true; fi
  docker rmi -f "$IMAGE" > /dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_up() { for _ in $(seq 100); do curl -fsS "$1/health" > /dev/null 2>&1 && return 0; sleep 0.1; done; echo "no answer at $1" >&2; return 1; }

start() { # path -> sets URL, PID or CID
  local port
  case $1 in
    process)
      port=$(free_port)
      PORT=$port HOST=127.0.0.1 RUST_LOG=warn taskset -c "$TARGET_CORE" "$BIN" > "$WORK/process.log" 2>&1 &
      PID=$!
      URL=http://127.0.0.1:$port ;;
    host)
      port=$(free_port)
      CID=$(docker run -d --label loadgate=1 --network host "${limit[@]}" --cpuset-cpus "$TARGET_CORE" \
        -e PORT="$port" -e HOST=127.0.0.1 -e RUST_LOG=warn "$IMAGE")
      URL=http://127.0.0.1:$port ;;
    published)
      CID=$(docker run -d --label loadgate=1 -p 127.0.0.1::8080 "${limit[@]}" --cpuset-cpus "$TARGET_CORE" \
        -e PORT=8080 -e RUST_LOG=warn "$IMAGE")
      port=$(docker port "$CID" 8080/tcp | head -1 | sed 's/.*://')
      URL=http://127.0.0.1:$port ;;
  esac
  wait_up "$URL"
}
stop() {
  if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; PID=""; fi
  if [ -n "$CID" ]; then docker rm -f "$CID" > /dev/null; CID=""; fi
}

printf '%-6s %-10s %8s %10s %9s %9s %8s %9s %7s\n' round path rate achieved p50_ms p99_ms dropped cpu_us/req valid
for round in $(seq 1 "$REPEAT"); do
  for path in $PATHS; do
    start "$path"
    for rate in $RATES; do
      out=$WORK/$round-$path-$rate.json
      set +e
      timeout --foreground 120 "$LG" loadgate attack --url "$URL$ROUTE" --rate "$rate" --duration "$DURATION" \
        --cpu "$GEN_CORE" --json "$out" > "$WORK/$round-$path-$rate.log" 2>&1
      set -e
      if [ -s "$out" ]; then
        jq -r --arg r "$round" --arg p "$path" '[ $r, $p, .offered_rate_per_sec, .achieved_rate_per_sec,
          .p50_ms, .p99_ms, .dropped, (.cpu_us_per_request // "-"), .valid ]
          | map(tostring) | @tsv' "$out" | awk -F'\t' '{ printf "%-6s %-10s %8.0f %10.0f %9.3f %9.3f %8s %9.1f %7s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9 }'
      else
        echo "$round $path $rate: no result ($(tail -1 "$WORK/$round-$path-$rate.log"))"
      fi
    done
    stop
  done
done
echo "results in $WORK"
