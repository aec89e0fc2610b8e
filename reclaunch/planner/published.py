"""The published results the planner is calibrated against (data/calibration.yaml), as plans.

Each row becomes a Spec (the model as published) and the catalog offer of its `instance_like`
machine, with the row's GPUs per node when it uses fewer than the instance has (4 of 8 H100s):
the fabric and host stand in for the published machine's; no spec rule is bent. Pure: no I/O
beyond reading the bundled data file.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from reclaunch.planner.constants import data_yaml
from reclaunch.spec.models import CRITEO_1TB_HOTS, CRITEO_1TB_ROWS
from reclaunch.spec.stacks import KNOBS

# TensorFlow2 WideAndDeep README "Features" (Outbrain): (dim, cardinality, hotness) of the 16
# deep embeddings; each feature also has a dim-1 wide (linear) embedding of the same cardinality.
OUTBRAIN_WD = ((128, 300000, 1), (19, 4, 1), (128, 100000, 1), (64, 4000, 1), (64, 1000, 1),
               (64, 2500, 1), (64, 300, 1), (64, 2000, 1), (64, 350, 3), (64, 10000, 3),
               (64, 100, 3), (128, 250000, 1), (64, 2500, 1), (64, 4000, 1), (64, 1000, 1),
               (128, 5000, 1))


# NVIDIA-Merlin/distributed-embeddings examples/benchmarks/synthetic_models/config_v3.py
# (4cb42d4a): EmbeddingConfig(num_tables, nnz, num_rows, width, shared). A shared table is looked
# up by one input per nnz entry (one pooled output each): here one table per input, its rows
# counted again (the memory is small beside the GPU's; lookups and outputs are as run).
DE_SYNTHETIC = {
    "de_tiny": ((1, (1, 10), 10000, 8), (1, (1, 10), 1000000, 16), (1, (1, 10), 25000000, 16),
                (1, (1,), 25000000, 16), (16, (1,), 10, 8), (10, (1,), 1000, 8),
                (4, (1,), 10000, 8), (2, (1,), 100000, 16), (19, (1,), 1000000, 16)),
    "de_small": ((5, (1, 30), 10000, 16), (3, (1, 30), 4000000, 32), (1, (1, 30), 50000000, 32),
                 (1, (1,), 50000000, 32), (30, (1,), 10, 16), (30, (1,), 1000, 16),
                 (5, (1,), 10000, 16), (5, (1,), 100000, 32), (27, (1,), 4000000, 32)),
}


@dataclass(frozen=True)
class Row:
    id: str
    source: str
    stack: str
    family: str
    gpu: str
    published: float
    raw: dict

    @property
    def gpus(self) -> int:
        return int(self.raw["nodes"]) * int(self.raw["gpus_per_node"])

    @property
    def held_out(self) -> bool:
        """A row of a source the constants are never fitted to (calibration.yaml `split`)."""
        return self.raw.get("split", "fit") == "holdout"

    @property
    def set_aside(self) -> str | None:
        """Why the row is neither fitted nor scored (calibration.yaml `set_aside`), or None."""
        return self.raw.get("set_aside")


def fit_rows() -> list[Row]:
    return [r for r in rows() if not r.held_out and not r.set_aside]


def held_out_rows() -> list[Row]:
    return [r for r in rows() if r.held_out and not r.set_aside]


@lru_cache(maxsize=1)
def rows() -> tuple[Row, ...]:
    data = data_yaml("calibration.yaml")
    return tuple(Row(r["id"], r["source"], r["stack"], r["family"], r["gpu"], float(r["published"]), r)
                 for r in data["rows"])


def source_of(row: Row) -> str:
    """The publication a row comes from (leave-one-source-out groups by this)."""
    s = row.source.split("#")[0]
    if s.startswith("mlcommons/"):
        return s.split()[0]               # one MLPerf round = one source
    return s


def _tables(model: dict) -> list[dict[str, Any]]:
    t = model.get("tables")
    if t == "criteo_1tb":
        scale = float(model.get("rows_total", sum(CRITEO_1TB_ROWS))) / sum(CRITEO_1TB_ROWS)
        multi = model.get("hot", "one") == "multi"
        return [{"name": f"cat_{i}", "rows": max(1, round(r * scale)), "pooling_factor": h if multi else 1}
                for i, (r, h) in enumerate(zip(CRITEO_1TB_ROWS, CRITEO_1TB_HOTS))]
    if t == "outbrain_wd":
        deep = [{"name": f"deep_{i}", "rows": n, "dim": d, "pooling_factor": h}
                for i, (d, n, h) in enumerate(OUTBRAIN_WD)]
        wide = [{"name": f"wide_{i}", "rows": n, "dim": 1, "pooling_factor": h}
                for i, (_, n, h) in enumerate(OUTBRAIN_WD)]
        return deep + wide
    if isinstance(t, str) and t in DE_SYNTHETIC:
        out = []
        for n, nnz, rows_, dim in DE_SYNTHETIC[t]:
            for _ in range(n):
                out += [{"name": f"t{len(out)}", "rows": rows_, "dim": dim, "pooling_factor": h} for h in nnz]
        return out
    return [{"name": f"t{i}", **x} for i, x in enumerate(t)]


_BUILT: dict = {}


def _built(row: Row, catalog):
    """(spec, offer) of a row on a catalog: the same for every constant a fit tries."""
    hit = _BUILT.get(row.id)
    if hit is None or hit[0] is not catalog or hit[1] is not row:
        hit = _BUILT[row.id] = (catalog, row, spec_for(row, catalog), offer_for(row, catalog))
    return hit[2], hit[3]


def spec_for(row: Row, catalog):
    from reclaunch.spec import Spec

    r = row.raw
    offer = offer_for(row, catalog)
    m = dict(r["model"])
    model = {k: v for k, v in m.items() if k not in ("tables", "hot", "rows_total")}
    model["tables"] = _tables(m)
    return Spec.model_validate({
        "name": "calib", "cloud": offer.cloud, "region": offer.region,
        "nodes": int(r["nodes"]), "gpus_per_node": int(r["gpus_per_node"]),
        "job": {"image": "x", "command": ["x"], "batch_size": int(r["batch_per_gpu"]),
                "precision": r["precision"], "optimizer": r["optimizer"],
                "stack": r["job_stack"], **{k: r[k] for k in KNOBS if k in r},
                **({"num_workers": r["num_workers"]} if "num_workers" in r else {}),
                "dataset": {"samples": 1e9}},
        "model": model})


def offer_for(row: Row, catalog):
    r = row.raw
    offer = next(o for o in catalog.offers if o.instance_type == r["instance_like"])
    if offer.gpu != row.gpu:
        raise ValueError(f"{row.id}: {r['instance_like']} has {offer.gpu}, the row says {row.gpu}")
    gpn = int(r["gpus_per_node"])
    return replace(offer, gpu_count=gpn) if gpn < offer.gpu_count else offer


def predict(row: Row, catalog=None):
    """-> (Plan, predicted / published)."""
    from reclaunch.catalog import bundled_catalog
    from reclaunch.planner import make_plan

    cat = catalog or bundled_catalog()
    spec, offer = _built(row, cat)
    plan = make_plan(spec, cat, offer=offer, nodes=int(row.raw["nodes"]))
    return plan, plan.throughput_samples_per_second / row.published
