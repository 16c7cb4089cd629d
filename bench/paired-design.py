#!/usr/bin/env python3
"""What a paired design would detect, from the pairs of runs already made (issue 13).

    bench/paired-design.py DIR_OR_FILE...

Reads every paired run under the arguments (a run's `result.json`, or the `pairs.json` that
`bench/paired-goals.sh keep` writes beside a kept run), and prints:

- per run: the pairs used, the per-pair SD of ln p50 and ln p99, and the smallest detectable
  change the gate reported (p50 and p99, all operations together);
- the median per-pair SDs over the runs;
- for other designs (pairs × block length), the smallest detectable p50 and p99 change that the
  gate would report with those median SDs, and the time the blocks take.

The projection uses the gate's own formula (stats/paired.rs, `detectable_change`): the threshold
plus (t(1 − α/m) + t(0.8)) · σ / √(n · 3/π) on the log scale, with Student quantiles on n − 1
degrees of freedom, α = 0.01 and m = 4 primary metrics. A longer block is assumed to scale the
per-pair SD by √(measured seconds then / measured seconds now) (the warm-up is not measured), which
holds for the sampling noise of a quantile, not for a machine that changes within a block: check a
chosen design with real runs. Standard library only.
"""

import json
import math
import os
import statistics
import sys

ALPHA = 0.01
PRIMARY = 4
POWER = 0.8
WILCOXON_EFFICIENCY = 3.0 / math.pi
THRESHOLDS = {"p50": 0.05, "p99": 0.10}


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b) (Numerical Recipes' continued fraction)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                + a * math.log(x) + b * math.log(1.0 - x))
    if x > (a + 1.0) / (a + b + 2.0):
        return 1.0 - betainc(b, a, 1.0 - x)
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((a + m2 - 1) * (a + m2)),
                    -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return math.exp(ln_front) * h / a


def t_cdf(t, df):
    x = df / (df + t * t)
    tail = 0.5 * betainc(df / 2.0, 0.5, x)
    return 1.0 - tail if t > 0 else tail


def t_quantile(p, df):
    lo, hi = -100.0, 100.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def detectable(n, sigma, delta):
    df = n - 1
    z = t_quantile(1.0 - ALPHA / PRIMARY, df) + t_quantile(POWER, df)
    margin = z * sigma / math.sqrt(n * WILCOXON_EFFICIENCY)
    return (1.0 + delta) * math.exp(margin) - 1.0


def runs(paths):
    for path in paths:
        if os.path.isdir(path):
            for root, _, files in sorted(os.walk(path)):
                for name in ("pairs.json", "result.json"):
                    if name in files:
                        yield os.path.join(root, name)
                        break
        else:
            yield path


def read(path):
    with open(path) as f:
        doc = json.load(f)
    if doc.get("status", "complete") != "complete":  # a run still going, or one that failed
        return None
    if "paired" in doc:  # a result.json
        paired = doc.get("paired") or {}
        design, pairs = paired.get("design"), paired.get("pairs")
        metrics = (doc.get("comparison") or {}).get("metrics") or []
    else:  # a pairs.json
        design, pairs, metrics = doc.get("design"), doc.get("pairs"), doc.get("metrics") or []
    if not design or not pairs:
        return None
    used = [p for p in pairs if p.get("used")]
    reported = {m["metric"]: m.get("detectable") for m in metrics
                if m.get("operation") is None and m.get("metric") in THRESHOLDS}
    sd = {}
    for metric in THRESHOLDS:
        logs = [math.log(p[f"{metric}_ratio"]) for p in used
                if p.get(f"{metric}_ratio") and p[f"{metric}_ratio"] > 0]
        sd[metric] = statistics.stdev(logs) if len(logs) > 1 else float("nan")
    return {"path": path, "design": design, "n": len(used), "sd": sd, "reported": reported}


def pct(x):
    return "—" if x is None or x != x else f"{x * 100:.1f}%"


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        sys.exit(2)
    found = [r for r in (read(p) for p in runs(sys.argv[1:])) if r]
    if not found:
        print("no paired run found", file=sys.stderr)
        sys.exit(1)
    print(f"{'run':<60} {'pairs':>5} {'SD ln p50':>9} {'SD ln p99':>9} {'det p50':>8} {'det p99':>8}")
    for r in found:
        print(f"{r['path'][-60:]:<60} {r['n']:>5} {r['sd']['p50']:>9.4f} {r['sd']['p99']:>9.4f} "
              f"{pct(r['reported'].get('p50')):>8} {pct(r['reported'].get('p99')):>8}")
    sd = {m: statistics.median([r["sd"][m] for r in found if r["sd"][m] == r["sd"][m]])
          for m in THRESHOLDS}
    design = found[0]["design"]
    block, warmup = design["block_s"], design["warmup_s"]
    print(f"\n{len(found)} run(s); median per-pair SD of ln p50 {sd['p50']:.4f}, of ln p99 "
          f"{sd['p99']:.4f} ({block:g} s blocks, {warmup:g} s warm-up)")
    print("\nprojected smallest detectable change (thresholds p50 5%, p99 10%, α/m = 0.0025, power 0.8)")
    print(f"{'pairs':>5} {'block':>6} {'blocks take':>11} {'p50':>7} {'p99':>7}")
    for n in (10, 12, 14, 16, 18, 20):
        for b in (5, 6, 7, 8):
            if b <= warmup:
                continue
            scale = math.sqrt((block - warmup) / (b - warmup))
            p50 = detectable(n, sd["p50"] * scale, THRESHOLDS["p50"])
            p99 = detectable(n, sd["p99"] * scale, THRESHOLDS["p99"])
            print(f"{n:>5} {b:>5}s {2 * n * b:>10}s {pct(p50):>7} {pct(p99):>7}")


if __name__ == "__main__":
    main()
