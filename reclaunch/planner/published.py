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


# TensorFlow (1) WideAndDeep README "Default configuration" (@11820597): (rows, dim, hotness) of the
# deep columns, request level then item level: 7 trainable one-hot embeddings (two of them 128
# wide: taken as the two largest, the README does not say which), 5 indicator columns (one-hot
# of 2, 2, 3, 3, 6 values: a dense block as wide as the values), 3 multi-hot (hotness 3 as the
# TF2 README gives for the same features), 4 item one-hot, 3 item multi-hot. Every feature also
# feeds the wide (linear, dim-1) part.
OUTBRAIN_WD_TF1 = ((300000, 128, 1), (100000, 128, 1), (4000, 64, 1), (2500, 64, 1), (2000, 64, 1),
                   (1000, 64, 1), (300, 64, 1), (2, 2, 1), (2, 2, 1), (3, 3, 1), (3, 3, 1), (6, 6, 1),
                   (10000, 64, 3), (350, 64, 3), (100, 64, 3), (250000, 128, 1), (4000, 64, 1),
                   (2500, 64, 1), (1000, 64, 1), (10000, 64, 3), (350, 64, 3), (100, 64, 3))


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
    def split(self) -> str:
        """fit, or the held-out set the row belongs to (calibration.yaml `split`)."""
        return str(self.raw.get("split", "fit"))

    @property
    def held_out(self) -> bool:
        """A row of a source the constants are never fitted to."""
        return self.split != "fit"

    @property
    def set_aside(self) -> str | None:
        """Why the row is neither fitted nor scored (calibration.yaml `set_aside`), or None."""
        return self.raw.get("set_aside")


def fit_rows() -> list[Row]:
    return [r for r in rows() if not r.held_out and not r.set_aside]


def held_out_rows(split: str | None = None) -> list[Row]:
    """Rows never fitted: of every held-out set, or of one (HELD_OUT_SETS)."""
    return [r for r in rows() if r.held_out and not r.set_aside and split in (None, r.split)]


# The held-out sets, in the order they were gathered (calibration.yaml `split`).
HELD_OUT_SETS = {
    "holdout": "first held-out set (2026-12-03: MLPerf v1.1, v2.1, v4.1, v5.0, Merlin distributed-embeddings)",
    "review": "planner review's independent rows (2026-12-03: MLPerf v5.1, FlagPerf, DeepLearningExamples TF1 W&D)",
}


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
    if t in ("outbrain_wd", "outbrain_wd_tf1"):
        cols = OUTBRAIN_WD if t == "outbrain_wd" else [(d, n, h) for n, d, h in OUTBRAIN_WD_TF1]
        deep = [{"name": f"deep_{i}", "rows": n, "dim": d, "pooling_factor": h}
                for i, (d, n, h) in enumerate(cols)]
        wide = [{"name": f"wide_{i}", "rows": n, "dim": 1, "pooling_factor": h}
                for i, (_, n, h) in enumerate(cols)]
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
    # What the published machine had where its stand-in differs: part of the GPUs, its own
    # network (`network_gbps`, e.g. one 200 Gb/s HCA per node), NVIDIA's SuperPOD fabric.
    over = {"gpu_count": gpn} if gpn < offer.gpu_count else {}
    if "network_gbps" in r:
        over["network_gbps"] = float(r["network_gbps"])
    if r.get("reference_fabric"):
        over["reference_fabric"] = True
    return replace(offer, **over) if over else offer


def predict(row: Row, catalog=None):
    """-> (Plan, predicted / published)."""
    from reclaunch.catalog import bundled_catalog
    from reclaunch.planner import make_plan

    cat = catalog or bundled_catalog()
    spec, offer = _built(row, cat)
    plan = make_plan(spec, cat, offer=offer, nodes=int(row.raw["nodes"]))
    return plan, plan.throughput_samples_per_second / row.published
