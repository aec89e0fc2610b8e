"""Published training throughput as planner inputs: the rows live in
reclaunch/planner/data/calibration.yaml (each with its source, GPU, batch, precision and the
model as published) and are turned into plans by reclaunch.planner.published.

`spec_for` stays as a small helper for tests that want a preset spec at a given size.
"""

from __future__ import annotations

from reclaunch.planner.published import predict, rows, source_of  # noqa: F401 (re-exported)
from reclaunch.spec import Spec


def spec_for(preset: str, over: dict, gpus: int, batch: int, cloud: str = "aws") -> Spec:
    model = {"preset": preset}
    for k in ("embedding_dtype", "sharding"):
        if k in over:
            model[k] = over[k]
    return Spec.model_validate({
        "name": "calib", "cloud": cloud, "region": "us-east-1", "nodes": 1, "gpus_per_node": gpus,
        "job": {"image": "x", "command": ["x"], "batch_size": batch, "precision": over["precision"],
                "optimizer": over["optimizer"], "dataset": {"samples": 1e9}},
        "model": model})
