"""Start-up benchmark and guard: `reclaunch --help`, `validate` and `plan` next to two baselines.

The guard: `validate` and `plan` within 1.5x of the yardstick, the smallest program that
validates one pydantic model read from YAML (baseline 2), measured in the same run. The last
lines print both ratios and say whether they are within it; the exit status is 1 when not
(judged on instructions with --instructions, else on CPU time). The first baseline is
`python -c "import pydantic, yaml"` (issue 2: `validate` under 2x of it).
Prints medians of N runs; run on demand (`make bench`), never as a timed unit test.
`--instructions` also counts each command's instructions once under valgrind (callgrind):
deterministic, so a change can be judged on a machine other agents or jobs are loading, where
CPU time itself drifts by 10% between runs. It is a proxy: the garbage collector's cost is
mostly cache misses, which time sees and an instruction count does not.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
N = int(ARGS[0]) if ARGS else 7
INSTRUCTIONS = "--instructions" in sys.argv
GUARD = 1.5   # validate and plan, each at most this many times the yardstick
YARDSTICK = "baseline 2: validate one pydantic model"
VALIDATE = "reclaunch validate examples/aws-deepfm-p4d.yaml"
PLAN = "reclaunch plan examples/aws-deepfm-p4d.yaml"


# The smallest program that validates one pydantic model read from YAML (issue 25's yardstick).
MINIMAL = ("import yaml, pydantic\n"
           "class M(pydantic.BaseModel):\n    name: str\n    nodes: int = 1\n"
           "M.model_validate({'name': yaml.safe_load(open('examples/aws-deepfm-p4d.yaml'))['name']})\n")


def wall(cmd: list[str]) -> tuple[float, float]:
    """Median wall time and median CPU time (user + sys of the child). On a shared, loaded
    machine the wall figure swings by 2x between runs; the CPU figure is what to compare."""
    times, cpus = [], []
    for _ in range(N):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(times), statistics.median(cpus)


def instructions(cmd: list[str]) -> float | None:
    """Instructions the command executes (valgrind's `I refs`), hash seed fixed."""
    if not shutil.which("valgrind"):
        return None
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd],
                         cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    m = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
    return float(m.group(1).replace(",", "")) if m else None


def guard(what: str, validate: float, plan: float) -> bool:
    """One line: validate's and plan's ratio to the yardstick, and whether both are within GUARD."""
    ok = validate <= GUARD and plan <= GUARD
    print(f"start-up guard ({what}): validate {validate:.2f}x, plan {plan:.2f}x of the yardstick: "
          f"{'within' if ok else 'NOT within'} {GUARD}x")
    return ok


def main() -> int:
    py = sys.executable
    cases = {
        "baseline: python -c 'import pydantic, yaml'": [py, "-c", "import pydantic, yaml"],
        YARDSTICK: [py, "-c", MINIMAL],
        "reclaunch --help": [py, "-m", "reclaunch", "--help"],
        VALIDATE: [py, "-m", "reclaunch", "validate", "examples/aws-deepfm-p4d.yaml"],
        PLAN: [py, "-m", "reclaunch", "plan", "examples/aws-deepfm-p4d.yaml"],
        "reclaunch plan --json examples/aws-deepfm-p4d.yaml": [py, "-m", "reclaunch", "plan",
                                                               "--json", "examples/aws-deepfm-p4d.yaml"],
    }
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("note: PYTHONDONTWRITEBYTECODE is set: modules without a .pyc compile on every run "
              "(python -m compileall reclaunch stacks first)")
    results = {name: wall(cmd) for name, cmd in cases.items()}
    base, base_cpu = next(iter(results.values()))
    print(f"median of {N} runs each: wall, and CPU (user+sys)")
    minimal_cpu = results[YARDSTICK][1]
    for name, (t, cpu) in results.items():
        print(f"{t * 1000:8.1f} ms  {t / base:5.2f}x   cpu {cpu * 1000:7.1f} ms  {cpu / base_cpu:5.2f}x"
              f"  vs baseline 2: cpu {cpu / minimal_cpu:5.2f}x  {name}")
    ok = guard(f"CPU time, median of {N}", results[VALIDATE][1] / minimal_cpu,
               results[PLAN][1] / minimal_cpu)
    if INSTRUCTIONS:
        counts = {name: instructions(cmd) for name, cmd in cases.items()}
        if None in counts.values():
            print("--instructions: valgrind is not installed, or a run gave no count")
            return 0 if ok else 1
        ref = counts[YARDSTICK]
        print("instructions (valgrind, one run each):")
        for name, n in counts.items():
            print(f"{n / 1e6:8.1f} M  vs baseline 2: {n / ref:5.2f}x  {name}")
        # Instructions do not drift with the machine's load: they decide when counted.
        ok = guard("instructions", counts[VALIDATE] / ref, counts[PLAN] / ref)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
