"""Calibration: published training throughput (reclaunch/planner/data/calibration.yaml) vs plan.

    python bench/bench_calibration.py           # the table, median / worst error, LOSO error
    python bench/bench_calibration.py --write   # refit the free constants, store them and the
                                                # leave-one-source-out residual quantiles (the
                                                # plan's P10-P90 range) in planner.yaml
Prints numbers; asserts nothing (tests/planner/test_calibration.py holds the tolerances).
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reclaunch.planner import fit  # noqa: E402
from reclaunch.planner.published import rows, source_of  # noqa: E402

YAML = ROOT / "reclaunch" / "planner" / "data" / "planner.yaml"


def summary(name: str, logs: list[float]) -> str:
    r = [math.exp(x) for x in logs]
    within = sum(1 for x in r if 0.8 <= x <= 1.25)
    beyond = sum(1 for x in r if x > 2 or x < 0.5)
    med = statistics.median(abs(x) for x in logs)
    worst = max(r, key=lambda x: abs(math.log(x)))
    return (f"{name}: {within}/{len(r)} within 25% ({within / len(r):.0%}), {beyond} beyond 2x, "
            f"median error {math.exp(med) - 1:.0%}, worst ratio {worst:.2f}")


def quantile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    i = q * (len(s) - 1)
    lo, hi = math.floor(i), math.ceil(i)
    return s[lo] + (s[hi] - s[lo]) * (i - lo)


def _num(v: float) -> str:
    """A YAML 1.1 float (PyYAML reads 5e-05 as a string: it wants a dot and a signed exponent)."""
    return f"{v:.4f}" if 1e-2 <= abs(v) < 1e3 else f"{v:.3e}"


def write(values: list[float], loso: list[float], n: int) -> None:
    text = YAML.read_text()
    names = {}
    for (path, _, _), v in zip(fit.FREE, values):
        key = path[-1] if len(path) == 1 else path[0]
        names[key] = v
        if len(path) == 1:
            text = re.sub(rf"(?m)^(  {key}: )[0-9.eE+-]+", lambda m: m.group(1) + _num(v), text, count=1)
        else:
            text = re.sub(rf"(?m)^(  {path[0]}: \{{.*?\b{path[1]}: )[0-9.eE+-]+",
                          lambda m: m.group(1) + _num(v), text, count=1)
    q10, q50, q90 = (quantile([math.exp(x) for x in loso], q) for q in (0.1, 0.5, 0.9))
    block = (f"  # predicted / published over the calibration rows, each predicted with the constants\n"
             f"  # fitted WITHOUT its source (leave-one-source-out): plan's P10-P90 range divides by these.\n"
             f"  fit: {{date: {dt.date.today().isoformat()}, rows: {n}, "
             f"ratio_p10: {q10:.3f}, ratio_p50: {q50:.3f}, ratio_p90: {q90:.3f},\n"
             f"        by: \"bench/bench_calibration.py --write (reclaunch/planner/fit.py)\"}}\n")
    if re.search(r"(?m)^  fit: ", text):
        text = re.sub(r"(?ms)^  # predicted / published over.*?^        by: [^\n]*\n", block, text, count=1)
    else:
        text = text.replace("  overlap: >-\n", block + "  overlap: >-\n", 1)
    YAML.write_text(text)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true", help="refit and store the constants + range")
    args = ap.parse_args()
    rs = list(rows())
    values = fit.fit(rs) if args.write else fit.current()
    logs = fit.log_ratios(rs, values)
    print(f"{'row':32s} {'stack':16s} {'gpu':11s} {'GPUs':>4s} {'published':>10s} {'predicted':>10s} {'ratio':>6s}")
    for r, x in zip(rs, logs):
        print(f"{r.id:32s} {r.stack:16s} {r.gpu:11s} {r.gpus:4d} {r.published / 1e6:9.2f}M "
              f"{r.published * math.exp(x) / 1e6:9.2f}M {math.exp(x):6.2f}")
    print("constants:", ", ".join(f"{'.'.join(p)}={v:.4g}" for (p, _, _), v in zip(fit.FREE, values)))
    print(summary("fit (all rows)", logs))
    loso = fit.leave_one_source_out(rs, values)
    for src, xs in loso.items():
        print(f"  without {src}: {', '.join(f'{math.exp(x):.2f}' for x in xs)}")
    flat = [x for xs in loso.values() for x in xs]
    print(summary("leave-one-source-out", flat))
    if args.write:
        write(values, flat, len(rs))
        print(f"wrote {YAML.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
