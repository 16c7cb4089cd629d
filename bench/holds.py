#!/usr/bin/env python3
"""Issue 14's "a rate holds" rule, shared by bench/peak.sh and bench/run-mode.sh.

A rate HOLDS for a run when:
  - the p99 latency, timed from each request's intended send time, is at most 10 ms
    (loadgate always times from the intended time; oha runs with --latency-correction);
  - under 0.1% of the offered requests lack a correct answer: dropped, never sent, or failed
    (oha offers rate x seconds; loadgate's arrivals are Poisson, and it counts what it offered);
  - for loadgate, the run kept its own schedule (exit 0 and `valid`).
CPU is user+sys of the whole generator process from /usr/bin/time, per offered request.

  holds.py row LABEL KIND RATE SECONDS OUT.json TIME_FILE EXIT_CODE REP   one JSON line
      KIND is `oha` (oha's --output-format json) or `loadgate` (attack --json)
  holds.py line ROW_JSON                                                 one line for people
  holds.py summary RESULTS [A B]                                         table, peaks, ratios
      the peak of each label (the highest rate held with every lower rate held too), each
      label's peak over oha's when oha ran, and A's CPU per request over B's when given
"""
import json
import sys


def row(label, kind, rate, dur, out, tfile, code, rep):
    rate, dur, code, rep = int(rate), float(dur), int(code), int(rep)
    try:
        u, s = map(float, open(tfile).read().split()[-2:])
    except Exception:
        u = s = float("nan")
    try:
        j = json.load(open(out))
    except Exception:
        return {"rep": rep, "rate": rate, "tool": label, "code": code, "holds": False,
                "why": f"no result (exit {code})"}
    if kind == "oha":
        offered = rate * dur
        good = int(j.get("statusCodeDistribution", {}).get("200", 0))
        p50 = (j["latencyPercentiles"].get("p50") or float("nan")) * 1e3
        p99 = (j["latencyPercentiles"].get("p99") or float("nan")) * 1e3
        ok_run = code == 0
    else:
        offered = j["requests"]        # its own count of arrivals (sent and dropped)
        good = offered - j["errors"]   # errors include drops and failed checks
        p50, p99 = j["p50_ms"], j["p99_ms"]
        ok_run = code == 0 and j["valid"]
    missing = max(offered - good, 0) / max(offered, 1)
    why = []
    if not p99 <= 10:
        why.append(f"p99 {p99:.1f} ms > 10")
    if missing >= 0.001:
        why.append(f"{missing:.2%} without a correct answer")
    if not ok_run:
        why.append(f"exit {code}")
    return {"rep": rep, "rate": rate, "tool": label, "code": code,
            "answered_per_sec": good / dur, "p50_ms": p50, "p99_ms": p99, "missing": missing,
            "cpu_us": (u + s) * 1e6 / max(offered, 1), "holds": not why, "why": "; ".join(why)}


def line(r):
    verdict = "holds" if r["holds"] else f"fails ({r['why']})"
    return (f"{r['tool']} {r['rate']}: {verdict}, {int(r.get('answered_per_sec', 0))}/s, "
            f"p99 {r.get('p99_ms', '-')} ms, {r.get('cpu_us', '-')} µs CPU/req")


def summary(path, ratio=None):
    rows = [json.loads(l) for l in open(path)]
    labels = list(dict.fromkeys(r["tool"] for r in rows))
    reps = sorted({r["rep"] for r in rows})
    print("| rep | rate | tool | answered/s | p50 ms | p99 ms | without an answer | CPU µs/req | holds |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        f = lambda k, fmt: (fmt.format(r[k]) if k in r and r[k] == r[k] else "–")
        print(f"| {r['rep']} | {r['rate']} | {r['tool']} | {f('answered_per_sec', '{:,.0f}')} | "
              f"{f('p50_ms', '{:.2f}')} | {f('p99_ms', '{:.2f}')} | {f('missing', '{:.3%}')} | "
              f"{f('cpu_us', '{:.1f}')} | {'yes' if r['holds'] else 'no: ' + r['why']} |")
    print()
    peaks = {}
    for rep in reps:
        for t in labels:
            peak = 0
            for r in sorted((r for r in rows if r["rep"] == rep and r["tool"] == t),
                            key=lambda r: r["rate"]):
                if not r["holds"]:
                    break
                peak = r["rate"]
            peaks.setdefault(t, []).append(peak)
    for t, p in peaks.items():
        print(f"peak of {t}: {', '.join(f'{x:,}' for x in p)} req/s (rep by rep)")
    if "oha" in peaks and len(peaks) > 1:
        for t, p in peaks.items():
            if t != "oha":
                ratios = [a / b if b else float("inf") for a, b in zip(p, peaks["oha"])]
                print(f"{t} / oha: {', '.join(f'{x:.2f}' for x in ratios)} (goal: at least 1.25)")
    if ratio:
        a, b = ratio
        for rep in reps:
            by = {(r["rate"], r["tool"]): r for r in rows if r["rep"] == rep}
            parts = [f"{rate:,}: {by[(rate, a)]['cpu_us'] / by[(rate, b)]['cpu_us']:.2f}"
                     for rate in sorted({k[0] for k in by})
                     if "cpu_us" in by.get((rate, a), {}) and "cpu_us" in by.get((rate, b), {})]
            print(f"rep {rep}: {a} / {b} CPU per request: {', '.join(parts)}")


if __name__ == "__main__":
    verb, args = sys.argv[1], sys.argv[2:]
    if verb == "row":
        print(json.dumps(row(*args)))
    elif verb == "line":
        print(line(json.loads(args[0])))
    elif verb == "summary":
        summary(args[0], args[1:3] if len(args) >= 3 else None)
    else:
        sys.exit(f"unknown verb {verb}: row, line or summary")
