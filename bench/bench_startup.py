"""Start-up benchmark: `reclaunch --help` and `reclaunch validate` next to the import baseline.

Targets: issue 2, `validate` under 2x `python -c "import pydantic, yaml"`; issue 25, `validate`
and `plan` within 1.3x of the smallest program that validates one pydantic model (the second
baseline), measured in the same run.
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


def main() -> None:
    py = sys.executable
    cases = {
        "baseline: python -c 'import pydantic, yaml'": [py, "-c", "import pydantic, yaml"],
        "baseline 2: validate one pydantic model": [py, "-c", MINIMAL],
        "reclaunch --help": [py, "-m", "reclaunch", "--help"],
        "reclaunch validate examples/aws-deepfm-p4d.yaml": [py, "-m", "reclaunch", "validate",
                                                            "examples/aws-deepfm-p4d.yaml"],
        "reclaunch plan examples/aws-deepfm-p4d.yaml": [py, "-m", "reclaunch", "plan",
                                                        "examples/aws-deepfm-p4d.yaml"],
        "reclaunch plan --json examples/aws-deepfm-p4d.yaml": [py, "-m", "reclaunch", "plan",
                                                               "--json", "examples/aws-deepfm-p4d.yaml"],
    }
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("note: PYTHONDONTWRITEBYTECODE is set: modules without a .pyc compile on every run "
              "(python -m compileall reclaunch stacks first)")
    results = {name: wall(cmd) for name, cmd in cases.items()}
    base, base_cpu = next(iter(results.values()))
    print(f"median of {N} runs each: wall, and CPU (user+sys)")
    minimal, minimal_cpu = results["baseline 2: validate one pydantic model"]
    for name, (t, cpu) in results.items():
        print(f"{t * 1000:8.1f} ms  {t / base:5.2f}x   cpu {cpu * 1000:7.1f} ms  {cpu / base_cpu:5.2f}x"
              f"  vs baseline 2: cpu {cpu / minimal_cpu:5.2f}x  {name}")
    if INSTRUCTIONS:
        counts = {name: instructions(cmd) for name, cmd in cases.items()}
        ref = counts["baseline 2: validate one pydantic model"]
        if ref is None:
            print("--instructions: valgrind is not installed")
            return
        print("instructions (valgrind, one run each):")
        for name, n in counts.items():
            print(f"{n / 1e6:8.1f} M  vs baseline 2: {n / ref:5.2f}x  {name}")


if __name__ == "__main__":
    main()
