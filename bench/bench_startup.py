"""Start-up benchmark: `reclaunch --help` and `reclaunch validate` next to the import baseline.

Target (issue 2): `validate` under 2x `python -c "import pydantic, yaml"`, measured in the same run.
Prints medians of N runs; run on demand (`make bench`), never as a timed unit test.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
N = int(sys.argv[1]) if len(sys.argv) > 1 else 7


def wall(cmd: list[str]) -> float:
    times = []
    for _ in range(N):
        t = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    py = sys.executable
    cases = {
        "baseline: python -c 'import pydantic, yaml'": [py, "-c", "import pydantic, yaml"],
        "reclaunch --help": [py, "-m", "reclaunch", "--help"],
        "reclaunch validate examples/aws-deepfm-p4d.yaml": [py, "-m", "reclaunch", "validate",
                                                            "examples/aws-deepfm-p4d.yaml"],
        "reclaunch plan examples/aws-deepfm-p4d.yaml": [py, "-m", "reclaunch", "plan",
                                                        "examples/aws-deepfm-p4d.yaml"],
    }
    results = {name: wall(cmd) for name, cmd in cases.items()}
    base = next(iter(results.values()))
    print(f"median of {N} runs each")
    for name, t in results.items():
        print(f"{t * 1000:8.1f} ms  {t / base:5.2f}x  {name}")


if __name__ == "__main__":
    main()
