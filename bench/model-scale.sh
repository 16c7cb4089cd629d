#!/usr/bin/env bash
# Scale of `cargo loadgate model` (issue 17): generate SIZE_MB of combined log in the demo's format
# into /tmp, run `model` over it under /usr/bin/time -v on one core, print MB/s and the peak RSS.
# Run it at two sizes to see that memory is flat in log size:
#
#   bench/model-scale.sh                # 1 GB
#   SIZE_MB=250 bench/model-scale.sh
#
# The log: sessions of the demo's operations (landing, login, accounts, transactions, transfer,
# ledger) from 20,000 users at a time, about 4,000 requests/s of log time, answer times in `rt=`.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MB=${SIZE_MB:-1000}
LOG=${LOG:-/tmp/loadgate-scale-${SIZE_MB}MB.log}
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install -y time)"; exit 1; }
cargo build --release -q -p cargo-loadgate
if [ ! -s "$LOG" ]; then
  python3 - "$LOG" "$SIZE_MB" <<'PY'
import random, sys, time
path, size_mb = sys.argv[1], int(sys.argv[2])
limit = size_mb * 1_000_000
rng = random.Random(1)
ops = [("GET", "/"), ("POST", "/login"), ("GET", "/accounts"),
       ("GET", "/accounts/acc-{u}-1/transactions"), ("POST", "/transfers"), ("GET", "/ledger/summary")]
nxt = {0: [1, 1, 1, 1, None], 1: [2] * 9 + [None], 2: [3, 3, 3, 4, 5, None], 3: [2, 4, None],
       4: [2, None], 5: [2, None]}
months = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()
t = 1_764_720_000.0
users = {}
written = 0
next_user = 0
with open(path, "w", buffering=1 << 20) as f:
    while written < limit:
        t += rng.expovariate(4000.0)
        if len(users) < 20000 or rng.random() < 0.02:
            u, op = next_user, 0
            next_user += 1
        else:
            u = rng.choice(list(users)) if rng.random() < 0.001 else next(iter(users))
            op = users.pop(u)
        tm = time.gmtime(int(t))
        method, p = ops[op]
        line = '10.%d.%d.%d - user-%d [%02d/%s/%04d:%02d:%02d:%02d.%06d +0000] "%s %s HTTP/1.1" 200 %d "-" "Mozilla/5.0 (X11; Linux x86_64)" rt=0.%06d user=user-%d\n' % (
            u % 250, u // 250 % 250, u % 7, u, tm.tm_mday, months[tm.tm_mon - 1], tm.tm_year,
            tm.tm_hour, tm.tm_min, tm.tm_sec, int((t % 1) * 1e6), method, p.format(u=u),
            200 + u % 900, rng.randrange(50, 5000), u)
        f.write(line)
        written += len(line)
        n = rng.choice(nxt[op])
        if n is not None:
            users[u] = n
PY
fi
bytes=$(stat -c %s "$LOG")
echo "log: $LOG, $bytes bytes, $(wc -l < "$LOG") lines"
/usr/bin/time -v taskset -c 0 target/release/cargo-loadgate model -p demo-service --from "$LOG" \
  --session-gap "${GAP:-1m}" --json > /tmp/loadgate-scale-model.json 2> /tmp/loadgate-scale-time.txt || {
  cat /tmp/loadgate-scale-time.txt; exit 1; }
wall=$(grep "Elapsed (wall clock)" /tmp/loadgate-scale-time.txt | awk '{print $NF}')
rss=$(grep "Maximum resident set size" /tmp/loadgate-scale-time.txt | awk '{print $NF}')
secs=$(python3 -c "p='$wall'.split(':'); print(sum(float(x)*60**i for i,x in enumerate(reversed(p))))")
python3 -c "print(f'model read {$bytes/1e6:.0f} MB in {$secs:.2f} s: {$bytes/1e6/$secs:.0f} MB/s on one core; max RSS {$rss/1024:.1f} MiB')"
jq -r '"sessions \(.sessions.sessions), kept \(.estimate.sessions), lines matched \(.sessions.matched_lines), malformed \(.scan.bad_lines)"' /tmp/loadgate-scale-model.json
