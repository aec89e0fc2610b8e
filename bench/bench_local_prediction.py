"""The local target predicted from this machine: `plan` (calibrated) vs what `make demo` measures.

    .venv/bin/python bench/bench_local_prediction.py [--spec examples/local-deepfm.yaml] [--home DIR]
                                                     [--recalibrate] [--runs 1]

1. `reclaunch calibrate --if-needed` (the host cache in --home; a fresh temporary home by
   default, so the bench measures calibration too),
2. `reclaunch plan SPEC --json`: the modelled samples/s from this host's calibration,
3. `reclaunch up SPEC --yes --fresh` (what `make demo` runs), whose measurement record is the
   measured samples/s (RECLAUNCH_METRICS, warm-up interval dropped),
4. `reclaunch plan SPEC --json` again: the plan now shows (and prices) the measured figure.
Prints predicted, measured, their ratio, whether it is within 25%, and the load average (the
machine may be shared: CPU rates move with other processes). Exit 1 when a step fails.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cli(home: str, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "RECLAUNCH_HOME": home,
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "reclaunch", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def plan(home: str, spec: str) -> dict:
    p = cli(home, "plan", spec, "--json", timeout=300)
    if p.returncode not in (0, 1):
        raise SystemExit(f"plan failed: {p.stderr.strip()}")
    return json.loads(p.stdout)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spec", default="examples/local-deepfm.yaml")
    ap.add_argument("--home", help="RECLAUNCH_HOME to use (default: a fresh temporary one)")
    ap.add_argument("--recalibrate", action="store_true", help="calibrate even when cached")
    ap.add_argument("--runs", type=int, default=1, help="demo runs (each one a measurement)")
    a = ap.parse_args(argv)
    tmp = None if a.home else tempfile.TemporaryDirectory(prefix="reclaunch-bench-")
    home = a.home or tmp.name
    t0 = time.monotonic()
    c = cli(home, "calibrate", *([] if a.recalibrate else ["--if-needed"]))
    if c.returncode != 0:
        print(c.stderr.strip())
        return 1
    print(c.stdout.strip())
    print(f"calibrate: {time.monotonic() - t0:.0f} s")
    before = plan(home, a.spec)
    predicted = before["throughput_samples_per_second"]
    print(f"plan (model): {predicted:,.0f} samples/s  [{before['throughput_basis']['source']}]")
    ratios = []
    for k in range(a.runs):
        load0 = os.getloadavg()[0]
        t1 = time.monotonic()
        up = cli(home, "up", a.spec, "--yes", "--fresh")
        if up.returncode != 0:
            print(up.stdout[-2000:], up.stderr[-2000:])
            return 1
        after = plan(home, a.spec)
        basis = after["throughput_basis"]
        if basis["kind"] != "measured":
            print(f"run {k + 1}: no measurement record was left (basis {basis})")
            return 1
        measured = after["throughput_samples_per_second"]
        ratio = predicted / measured
        ratios.append(ratio)
        print(f"run {k + 1}: measured {measured:,.0f} samples/s in {time.monotonic() - t1:.0f} s "
              f"(load {load0:.2f} -> {os.getloadavg()[0]:.2f}); predicted/measured = {ratio:.2f} "
              f"({'within' if abs(ratio - 1) <= 0.25 else 'OUTSIDE'} 25%)")
        print(f"  plan now: {after['throughput_samples_per_second']:,.0f} samples/s measured, model "
              f"{after['throughput_model_samples_per_second']:,.0f}, basis {basis['source']}")
    if len(ratios) > 1:
        print(f"ratios: {', '.join(f'{r:.2f}' for r in ratios)}")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
