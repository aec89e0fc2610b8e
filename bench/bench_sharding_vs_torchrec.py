"""reclaunch's sharding plan vs TorchRec 1.8's own proposal, both rated by reclaunch's model.

    .venv/bin/python bench/bench_sharding_vs_torchrec.py [--models dlrm,dcnv2,deepfm,din]
        [--gpus 40,80,141] [--batches 256,2048,16384,65536] [--nodes 1,2,4,16]

For every grid point (AWS p4d / p5 / p5en: 8 x 40, 80, 141 GB per node) TorchRec's
EmbeddingShardingPlanner plans the table set on the meta device (no GPU; see
tests/planner/torchrec_grid.py), and the line prints our modelled step, TorchRec's plan
(its types and ranks) rated by our model, the same types pinned per table through the spec
(`sharding:`) and placed by our planner, the ratio ours / best of the two (<= 1 is the
promise of issue 21 item 4), and each plan's mix of sharding types. Many-node DLRM/DCNv2
points take TorchRec minutes each on a small machine.
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "planner"))

SHORT = {"data_parallel": "DP", "table_wise": "TW", "row_wise": "RW", "column_wise": "CW",
         "table_row_wise": "TWRW"}


def mix(kinds) -> str:
    n: dict[str, int] = {}
    for k in kinds:
        n[SHORT[k]] = n.get(SHORT[k], 0) + 1
    return " ".join(f"{v}{k}" for k, v in sorted(n.items()))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="dlrm,dcnv2,deepfm,din")
    ap.add_argument("--gpus", default="40,80,141")
    ap.add_argument("--batches", default="256,2048,16384,65536")
    ap.add_argument("--nodes", default="1,2,4,16")
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    from torchrec_grid import grid_spec, pinned, torchrec_proposal
    from reclaunch.catalog import bundled_catalog
    from reclaunch.planner import make_plan
    from reclaunch.planner.core import rate_sharding

    cat = bundled_catalog()
    print(f"{'model':7}{'GB':>4}{'batch':>7}{'nodes':>6}{'ours ms':>10}{'TorchRec ms':>12}"
          f"{'pinned ms':>10}{'ratio':>7}  ours / TorchRec types   (TorchRec plan s)")
    ratios, slower = [], 0
    for model in a.models.split(","):
        for gib in map(int, a.gpus.split(",")):
            for batch in map(int, a.batches.split(",")):
                for nodes in map(int, a.nodes.split(",")):
                    spec = grid_spec(model, gib, batch, nodes)
                    t = time.perf_counter()
                    prop = torchrec_proposal(spec)
                    tr_s = time.perf_counter() - t
                    plan = make_plan(spec, cat)
                    tables = spec.model.tables
                    assign = [(prop[x.name][0], prop[x.name][1], max(1, len(prop[x.name][1]))) for x in tables]
                    theirs = rate_sharding(spec, assign, cat, plan.offer, plan.nodes)
                    pin = make_plan(pinned(spec, {n: k for n, (k, _) in prop.items()}), cat)
                    ours = plan.step.total_seconds
                    r = ours / min(theirs.total, pin.step.total_seconds)
                    ratios.append(r)
                    slower += r > 1 + 1e-9
                    print(f"{model:7}{gib:>4}{batch:>7}{nodes:>6}{ours * 1e3:>10.3f}{theirs.total * 1e3:>12.3f}"
                          f"{pin.step.total_seconds * 1e3:>10.3f}{r:>7.3f}  "
                          f"{mix(t.sharding_type for t in plan.sharding.tables)} / "
                          f"{mix(prop[x.name][0] for x in tables)}   ({tr_s:.1f})", flush=True)
    print(f"{len(ratios)} points: ours slower on {slower}; ratio ours/TorchRec best "
          f"{min(ratios):.3f}, median {sorted(ratios)[len(ratios) // 2]:.3f}, worst {max(ratios):.3f}")
    return 1 if slower else 0


if __name__ == "__main__":
    raise SystemExit(main())
