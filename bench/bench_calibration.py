"""Calibration: published training throughput (reclaunch/planner/data/calibration.yaml) vs plan.

    python bench/bench_calibration.py           # fit rows, leave-one-source-out, held-out split
    python bench/bench_calibration.py --write   # refit the free constants on the fit rows, store
                                                # them, the leave-one-source-out band (the plan's
                                                # P10-P90 range) and the held-out result in planner.yaml
    python bench/bench_calibration.py --no-loso # skip the leave-one-source-out refits (minutes)

Rows of held-out sources (`split: holdout`, `split: review`) are never fitted: they are predicted with the constants the fit
rows gave, and the plan's own P10-P90 range (planner/uncertainty.py, as `plan` prints it) is
checked against them. Prints numbers; asserts nothing (tests/planner/test_calibration.py holds
the tolerances).
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

from reclaunch.catalog import bundled_catalog  # noqa: E402
from reclaunch.planner import fit  # noqa: E402
from reclaunch.planner.published import (HELD_OUT_SETS, fit_rows, held_out_rows, predict, rows,  # noqa: E402
                                         source_of)

YAML = ROOT / "reclaunch" / "planner" / "data" / "planner.yaml"


def summary(name: str, ratios: list[float]) -> str:
    n = len(ratios)
    within = sum(1 for x in ratios if 0.8 <= x <= 1.25)
    within15 = sum(1 for x in ratios if 1 / 1.5 <= x <= 1.5)
    beyond = sum(1 for x in ratios if x > 2 or x < 0.5)
    med = statistics.median(abs(math.log(x)) for x in ratios)
    worst = max(ratios, key=lambda x: abs(math.log(x)))
    return (f"{name}: {n} rows; {within}/{n} within 25%, {within15}/{n} within 1.5x "
            f"({within15 / n:.1%}), {beyond} beyond 2x, median error {math.exp(med) - 1:.0%}, "
            f"worst ratio {worst:.2f}")


def quantile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    i = q * (len(s) - 1)
    lo, hi = math.floor(i), math.ceil(i)
    return s[lo] + (s[hi] - s[lo]) * (i - lo)


def _num(v: float) -> str:
    """A YAML 1.1 float (PyYAML reads 5e-05 as a string: it wants a dot and a signed exponent)."""
    return f"{v:.4f}" if 1e-2 <= abs(v) < 1e3 else f"{v:.3e}"


def write(values: list[float], loso: list[float], n_fit: int, n_sources: int, held: dict) -> None:
    text = YAML.read_text()
    for (path, _, _), v in zip(fit.FREE, values):
        if len(path) == 1:
            text = re.sub(rf"(?m)^(  {path[0]}: )[0-9.eE+-]+", lambda m: m.group(1) + _num(v), text, count=1)
        else:
            text = re.sub(rf"(?m)^(  {path[0]}: \{{.*?\b{path[1]}: )[0-9.eE+-]+",
                          lambda m: m.group(1) + _num(v), text, count=1)
    q10, q50, q90 = (quantile(loso, q) for q in (0.1, 0.5, 0.9))
    block = (f"  # predicted / published over the fit rows, each predicted with the constants fitted\n"
             f"  # WITHOUT its source (leave-one-source-out): plan's P10-P90 range divides by these.\n"
             f"  # holdout, review: the rows of each held-out set (sources never fitted), predicted with these.\n"
             f"  fit: {{date: {dt.date.today().isoformat()}, rows: {n_fit}, sources: {n_sources}, "
             f"ratio_p10: {q10:.3f}, ratio_p50: {q50:.3f}, ratio_p90: {q90:.3f},\n"
             + "".join(f"        {name}: {{rows: {h['rows']}, sources: {h['sources']}, "
                       f"within_1_5x: {h['within']}, beyond_2x: {h['beyond']}, "
                       f"in_range: {h['in_range']}}},\n" for name, h in held.items()) +
             f"        by: \"bench/bench_calibration.py --write (reclaunch/planner/fit.py)\"}}\n")
    text = re.sub(r"(?ms)^  # predicted / published over.*?^        by: [^\n]*\n", block, text, count=1)
    YAML.write_text(text)
    from reclaunch.planner import constants as consts

    consts._constants.cache_clear()


def _held_out(rs, cat) -> tuple[list[float], list[str], int]:
    """(ratios, lines, rows inside the plan's printed P10-P90 range) of the held-out rows."""
    ratios, lines, inside = [], [], 0
    for r in rs:
        plan, x = predict(r, cat)
        lo, hi = plan.throughput_range or (float("nan"), float("nan"))
        ok = lo <= r.published <= hi
        inside += ok
        ratios.append(x)
        lines.append(f"{r.id:34s} {r.gpu:11s} {r.gpus:4d} {r.published / 1e6:9.2f}M "
                     f"{plan.throughput_samples_per_second / 1e6:9.2f}M {x:6.2f}  "
                     f"[{lo / 1e6:.2f}M - {hi / 1e6:.2f}M] {'in' if ok else 'OUT'}")
    return ratios, lines, inside


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true", help="refit and store the constants + range")
    ap.add_argument("--no-loso", action="store_true", help="skip leave-one-source-out")
    args = ap.parse_args()
    cat = bundled_catalog()
    every = list(rows())
    train, held = fit_rows(), held_out_rows()
    aside = [r for r in every if r.set_aside]
    values = fit.fit(train, catalog=cat) if args.write else fit.current()
    print(f"{len(every)} rows from {len({source_of(r) for r in every})} sources ({len(aside)} set aside): "
          f"{len(train)} fit rows ({len({source_of(r) for r in train})} sources), "
          f"{len(held)} held-out rows ({len({source_of(r) for r in held})} sources, never fitted); "
          f"{sum(r.gpus >= 16 for r in every)} rows at 16+ GPUs, {sum(r.gpus <= 4 for r in every)} on 1-4")
    print("constants:", ", ".join(f"{'.'.join(p)}={v:.4g}" for (p, _, _), v in zip(fit.FREE, values)))
    logs = fit.log_ratios(train, values, cat)
    print(f"\n{'fit row':34s} {'stack':16s} {'gpu':11s} {'GPUs':>4s} {'published':>10s} {'predicted':>10s} {'ratio':>6s}")
    for r, x in zip(train, logs):
        print(f"{r.id:34s} {r.stack[:16]:16s} {r.gpu:11s} {r.gpus:4d} {r.published / 1e6:9.2f}M "
              f"{r.published * math.exp(x) / 1e6:9.2f}M {math.exp(x):6.2f}")
    print(summary("fit (rows fitted)", [math.exp(x) for x in logs]))
    flat: list[float] = []
    if not args.no_loso:
        print("\nleave-one-source-out (each source predicted by constants fitted without it):")
        loso = fit.leave_one_source_out(train, catalog=cat)
        for src, xs in loso.items():
            print(f"  without {src}: {', '.join(f'{math.exp(x):.2f}' for x in xs)}")
        flat = [math.exp(x) for xs in loso.values() for x in xs]
        print(summary("leave-one-source-out", flat))
        print(f"  P10 / P50 / P90 of predicted/published: {quantile(flat, 0.1):.3f} / "
              f"{quantile(flat, 0.5):.3f} / {quantile(flat, 0.9):.3f} (the plan's band)")
    if args.write:
        if not flat:
            raise SystemExit("--write needs the leave-one-source-out band: drop --no-loso")
        # The band is stored before the held-out rows are rated: they are rated by it, never it by them.
        write(values, flat, len(train), len({source_of(r) for r in train}),
              {s: {"rows": 0, "sources": 0, "within": 0, "beyond": 0, "in_range": 0} for s in HELD_OUT_SETS})
    record, every_ratio, every_inside = {}, [], 0
    for name, what in HELD_OUT_SETS.items():   # each held-out set apart, then all of them
        rs = held_out_rows(name)
        ratios, lines, inside = _held_out(rs, cat)
        print(f"\nheld out, {name}: {what}")
        print(f"{'held-out row':34s} {'gpu':11s} {'GPUs':>4s} {'published':>10s} {'predicted':>10s} "
              f"{'ratio':>6s}  plan's P10-P90 range")
        print("\n".join(lines))
        print(summary(f"held out, {name} (never fitted)", ratios))
        print(f"  the plan's P10-P90 range holds {inside}/{len(rs)} ({inside / len(rs):.1%}) of them")
        record[name] = {"rows": len(rs), "sources": len({source_of(r) for r in rs}), "in_range": inside,
                        "within": sum(1 for x in ratios if 1 / 1.5 <= x <= 1.5),
                        "beyond": sum(1 for x in ratios if x > 2 or x < 0.5)}
        every_ratio += ratios
        every_inside += inside
    print()
    print(summary("held out, every set (never fitted)", every_ratio))
    print(f"  the plan's P10-P90 range holds {every_inside}/{len(held)} ({every_inside / len(held):.1%}) of them")
    for r in aside:   # kept for the record, neither fitted nor scored (calibration.yaml set_aside)
        print(f"set aside: {r.id} ratio {predict(r, cat)[1]:.2f}: {' '.join(r.set_aside.split())}")
    if args.write:
        write(values, flat, len(train), len({source_of(r) for r in train}), record)
        print(f"wrote {YAML.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
