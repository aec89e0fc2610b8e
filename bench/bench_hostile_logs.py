"""Issue 26: `status` on a local cluster whose rank 0 printed N metrics lines, and one 50 MB
line without a newline. Before: a million lines made `status` take 13 s and a 300 MB line
cost 0.9 GB; now status reads the newest 1 MiB of each log. Prints numbers; run on demand:
    RECLAUNCH_HOME=$(mktemp -d) python bench/bench_hostile_logs.py [N]
"""

from __future__ import annotations

import json
import resource
import sys
import time

from reclaunch.providers.local.provider import LocalProvider
from reclaunch.providers.local import proc as lp
from reclaunch.runtime.observe import measured_brief


def main(n: int) -> None:
    root = lp.cluster_dir("bench")
    (root / "nodes").mkdir(parents=True, exist_ok=True)
    lp.write_json(root / "launch.json", {"name": "bench", "run_id": "r", "nodes": 1,
                                         "max_nodes": 1, "nproc": 1})
    lp.write_json(root / "state.json", {"name": "bench", "run_id": "r", "state": "Succeeded",
                                        "nodes": [], "torn_down": True})
    with open(root / "nodes" / "node-0.log", "w") as f:
        f.write("x" * 50_000_000 + "\n")   # one 50 MB line, early in the run
        for i in range(n):
            f.write("[rank0]: RECLAUNCH_METRICS " + json.dumps(
                {"v": 1, "rank": 0, "world_size": 1, "step": i, "time": 1.7e9 + i,
                 "samples_per_s": 1000.0, "step_s": 0.01}) + "\n")
    size = (root / "nodes" / "node-0.log").stat().st_size
    p = LocalProvider()
    for label, lines in (("status (recent 1 MiB)", lambda: p.recent_logs("bench", rank=0)),
                         ("every line (diagnose)", lambda: p.logs("bench", rank=0))):
        t = time.perf_counter()
        count = sum(1 for _ in lines())
        print(f"{label:24s}: {count:8d} lines in {time.perf_counter() - t:6.2f} s "
              f"(log {size / 2**20:.0f} MiB)")
    for run in ("first (imports)", "second"):
        t = time.perf_counter()
        brief = measured_brief("bench", p)
        print(f"measured_brief, {run}: {time.perf_counter() - t:.2f} s, "
              f"step {brief and brief['step']}")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
