"""What the planner adds to `reclaunch plan FILE` (issue 25, start-up): in-process CPU ms of each
phase after the spec is loaded, median of N fresh processes (each phase's imports included,
so a module moved off the path shows here). `python bench/bench_plan_phases.py [N] [FILE...]`.
Run on demand, never as a timed unit test; bench/bench_startup.py times the whole command.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# One process: load the spec as `plan` does, then time each phase `plan` runs after it.
PHASES = r"""
import json, sys, time
from reclaunch.cli import _cheaper_region, _load
spec, catalog = _load(sys.argv[1])
out, t = {}, time.process_time()
def lap(name):
    global t
    now = time.process_time(); out[name] = (now - t) * 1e3; t = now
from reclaunch import planner; lap("import planner")
from reclaunch.runtime.measurements import plan_context
plan = planner.make_plan(spec, catalog, context=plan_context(spec)); lap("make_plan")
_cheaper_region(spec, plan, catalog); lap("cheaper region")
plan.to_json(); lap("to_json")
from reclaunch.cli.dryrun import needs_a_person
needs_a_person(plan); lap("needs a person")
print(json.dumps(out))
"""


def main() -> None:
    args = sys.argv[1:]
    n = int(args.pop(0)) if args and args[0].isdigit() else 7
    files = args or ["examples/aws-deepfm-p4d.yaml", "examples/azure-din-nd96amsr.yaml"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # keep .pyc
    env["PYTHONPATH"] = str(ROOT)
    for f in files:
        runs: dict[str, list[float]] = {}
        for _ in range(n):
            res = subprocess.run([sys.executable, "-c", PHASES, f], cwd=ROOT, env=env,
                                 capture_output=True, text=True, check=True)
            for k, v in json.loads(res.stdout.strip().splitlines()[-1]).items():
                runs.setdefault(k, []).append(v)
        med = {k: statistics.median(v) for k, v in runs.items()}
        parts = ", ".join(f"{k} {v:.1f}" for k, v in med.items())
        print(f"{f}: {sum(med.values()):.1f} ms CPU ({parts}; median of {n})")


if __name__ == "__main__":
    main()
