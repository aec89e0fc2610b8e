"""Render benchmark: a 1,000-node job renders in under 200 ms and its size does not grow
with the node count (issue 4). Prints numbers; run on demand."""

from __future__ import annotations

import time
from pathlib import Path

from reclaunch.planner import make_plan
from reclaunch.manifests.job import render, to_yaml
from reclaunch.spec import parse_spec

ROOT = Path(__file__).resolve().parent.parent
TEXT = (ROOT / "examples" / "gcp-dcnv2-a3mega.yaml").read_text()


def main() -> None:
    sizes = {}
    for nodes in (8, 1000):
        plan = make_plan(parse_spec(TEXT.replace("nodes: 8", f"nodes: {nodes}", 1)))
        best = float("inf")
        for _ in range(20):
            t = time.perf_counter()
            text = to_yaml(render(plan))
            best = min(best, time.perf_counter() - t)
        sizes[nodes] = len(text)
        print(f"nodes={nodes:5d}: render+yaml {best * 1000:7.2f} ms (best of 20), {len(text)} bytes")
    print(f"size ratio 1000/8 nodes: {sizes[1000] / sizes[8]:.4f} (target: ~1.0)")


if __name__ == "__main__":
    main()
