"""The spec's share of `validate` start-up (issue 25): CPU time to import reclaunch.spec and to
load one example, after `import pydantic, yaml` and the catalog. The spec's models are the first
pydantic models `validate` builds, so their import also pays pydantic's first-model work.
Each run is a fresh interpreter; prints medians. Run on demand, never as a timed unit test:
`python bench/bench_spec.py [N]`.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
N = int(sys.argv[1]) if len(sys.argv) > 1 else 9

PHASES = """
import json, time
t = [time.process_time()]
def lap():
    t.append(time.process_time())
import pydantic, yaml; lap()
from reclaunch.catalog import load_catalog
cat = load_catalog(); lap()
import reclaunch.spec; lap()
reclaunch.spec.load_spec("examples/aws-deepfm-p4d.yaml", cat); lap()
print(json.dumps([(b - a) * 1000 for a, b in zip(t, t[1:])]))
"""
NAMES = ("import pydantic, yaml", "catalog", "import reclaunch.spec",
         "load_spec examples/aws-deepfm-p4d.yaml")


def main() -> None:
    runs = []
    for _ in range(N):
        out = subprocess.run([sys.executable, "-c", PHASES], cwd=ROOT, capture_output=True,
                             text=True, check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"median CPU of {N} fresh interpreters")
    for i, name in enumerate(NAMES):
        print(f"{statistics.median(r[i] for r in runs):7.1f} ms  {name}")


if __name__ == "__main__":
    main()
