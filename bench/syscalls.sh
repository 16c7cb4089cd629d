#!/usr/bin/env bash
# Syscalls, context switches and CPU per request of loadgate and oha, interleaved, against a
# server already listening on 127.0.0.1 (e.g. the nginx bench/engine.sh starts, or any other).
#
# Usage: bench/syscalls.sh URL RATE SECONDS REPS TOOL...
#   TOOL is `oha` or a path to a cargo-loadgate binary (to compare builds side by side).
#   e.g. bench/syscalls.sh http://127.0.0.1:18080/index.txt 10000 4 3 /tmp/old target/release/cargo-loadgate oha
# Needs perf with the syscalls tracepoints (`perf stat -e raw_syscalls:sys_enter true`). Every
# generator runs pinned to GEN_CORE (default 0). Lag read from these runs is inflated by the
# tracing: read lag from bench/engine.sh instead.
set -euo pipefail
url=$1 rate=$2 dur=$3 reps=$4; shift 4
case $url in http://127.0.0.1:*|http://localhost:*|http://\[::1\]:*) ;; *) echo "loopback URLs only" >&2; exit 2 ;; esac
GEN_CORE=${GEN_CORE:-0}
work=$(mktemp -d /tmp/loadgate-syscalls.XXXXXX)
trap 'rm -rf "$work"' EXIT
events=task-clock,context-switches,raw_syscalls:sys_enter,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_write,syscalls:sys_enter_timerfd_settime,syscalls:sys_enter_connect
for _ in $(seq "$reps"); do
  for tool in "$@"; do
    if [ "$tool" = oha ]; then
      perf stat -x, -o "$work/stat" -e "$events" taskset -c "$GEN_CORE" \
        oha --no-tui --output-format json -z "${dur}s" -q "$rate" -c 100 "$url" > "$work/out" 2>/dev/null || true
      n=$(python3 -c "import json,sys; print(sum(json.load(open(sys.argv[1]))['statusCodeDistribution'].values()))" "$work/out")
    else
      perf stat -x, -o "$work/stat" -e "$events" taskset -c "$GEN_CORE" \
        "$tool" loadgate attack --url "$url" --rate "$rate" --duration "${dur}s" --cpu "$GEN_CORE" \
        --timeout 10s --json "$work/out" > /dev/null 2>&1 || true
      n=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['requests'])" "$work/out")
    fi
    python3 - "$tool" "$rate" "$n" "$work/stat" <<'PY'
import sys
tool, rate, n, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
d = {}
for line in open(path):
    f = line.strip().split(",")
    if len(f) > 3 and f[0][:1].isdigit():
        d[f[2]] = float(f[0])
g = lambda k: d.get(k, 0) / max(n, 1)
print(f"{tool[-24:]:>24} rate {rate:>6} requests {n:6} task-clock µs/req {g('task-clock') * 1e3:6.1f} "
      f"cs/req {g('context-switches'):4.2f} syscalls/req {g('raw_syscalls:sys_enter'):5.2f} "
      f"epoll_wait {g('syscalls:sys_enter_epoll_wait'):4.2f} write {g('syscalls:sys_enter_write'):4.2f} "
      f"timerfd_settime {g('syscalls:sys_enter_timerfd_settime'):4.2f} connects {d.get('syscalls:sys_enter_connect', 0):.0f}")
PY
  done
done
