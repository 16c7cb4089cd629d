"""Wake-up lateness of a bare sleeper: the scheduling noise floor under a generator's pacing lag.

Usage: python3 bench/sleeper.py COUNT PERIOD_SECONDS   (e.g. 3000 0.001: 1,000 wake-ups/s for 3 s)
Sleeps to absolute deadlines COUNT times and prints the percentiles of how late each wake-up was.
"""
import sys
import time

count, period = int(sys.argv[1]), float(sys.argv[2])
late = []
deadline = time.monotonic()
for _ in range(count):
    deadline += period
    remaining = deadline - time.monotonic()
    if remaining > 0:
        time.sleep(remaining)
    late.append(time.monotonic() - deadline)
late.sort()
q = lambda p: late[min(int(count * p), count - 1)] * 1e3
print(f"wake-up lateness p50 {q(0.5):.3f} ms, p99 {q(0.99):.3f} ms, p99.9 {q(0.999):.3f} ms, max {late[-1] * 1e3:.3f} ms")
