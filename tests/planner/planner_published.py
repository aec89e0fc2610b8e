"""Published training throughput (reference/recsys.md) as planner inputs, for calibration.

Each row: (label, published samples/s, preset, overrides, instance_type, gpus, per-GPU batch).
Configs follow the cited repos' defaults; where a detail is unknown the row says so.
"""

from __future__ import annotations

from dataclasses import replace

from reclaunch.catalog import bundled_catalog
from reclaunch.spec import Spec

# DeepLearningExamples runs use a 64k global batch; TorchRec README states its global batches.
PUBLISHED = [
    ("DLRM PyTorch 1xA100-80GB AMP", 4.02e6, "dlrm", {"precision": "fp16", "optimizer": "sgd", "embedding_dtype": "fp16"}, "p4de.24xlarge", 1, 65536),
    ("DLRM PyTorch 8xA100-80GB AMP", 16.5e6, "dlrm", {"precision": "fp16", "optimizer": "sgd", "embedding_dtype": "fp16"}, "p4de.24xlarge", 8, 8192),
    ("DLRM TF2 1xA100 SGD", 4.55e6, "dlrm", {"precision": "fp16", "optimizer": "sgd", "embedding_dtype": "fp16"}, "p4de.24xlarge", 1, 65536),
    ("DLRM TF2 8xA100 SGD", 13.8e6, "dlrm", {"precision": "fp16", "optimizer": "sgd", "embedding_dtype": "fp16"}, "p4de.24xlarge", 8, 8192),
    ("DCNv2 TF2 1xA100 Adam", 1.37e6, "dcnv2", {"precision": "fp16", "optimizer": "adam", "embedding_dtype": "fp16"}, "p4de.24xlarge", 1, 65536),
    ("DCNv2 TF2 8xA100 Adam", 5.75e6, "dcnv2", {"precision": "fp16", "optimizer": "adam", "embedding_dtype": "fp16"}, "p4de.24xlarge", 8, 8192),
    # Wide&Deep (Outbrain): tables are not in recsys.md; 26 x 2e5-row tables stand in (hashed Outbrain features).
    # DeepLearningExamples TensorFlow2/Recommendation/WideAndDeep trains multi-GPU with Horovod
    # data parallelism (every GPU holds every table): pinned, since we predict that run.
    ("Wide&Deep TF2 1xA100", 2.31e6, "wide_deep", {"precision": "fp16", "optimizer": "adam", "tables": 26, "sharding": "data"}, "p4de.24xlarge", 1, 131072),
    ("Wide&Deep TF2 8xA100", 5.74e6, "wide_deep", {"precision": "fp16", "optimizer": "adam", "tables": 26, "sharding": "data"}, "p4de.24xlarge", 8, 16384),
    ("DCNv2 TorchRec 8xA100-40GB 16k", 0.90e6, "dcnv2", {"precision": "fp32", "optimizer": "adagrad"}, "p4d.24xlarge", 8, 2048),
    ("DCNv2 TorchRec 8xA100-40GB 131k", 1.19e6, "dcnv2", {"precision": "fp32", "optimizer": "adagrad"}, "p4d.24xlarge", 8, 16384),
]


def spec_for(preset: str, over: dict, gpus: int, batch: int, cloud: str = "aws") -> Spec:
    model = {"preset": preset}
    if "embedding_dtype" in over:
        model["embedding_dtype"] = over["embedding_dtype"]
    if "sharding" in over:
        model["sharding"] = over["sharding"]
    if "tables" in over:
        model["tables"] = [{"name": f"t{i}", "rows": 200_000} for i in range(over["tables"])]
    return Spec.model_validate({
        "name": "calib", "cloud": cloud, "region": "us-east-1", "nodes": 1, "gpus_per_node": gpus,
        "job": {"image": "x", "command": ["x"], "batch_size": batch, "precision": over["precision"],
                "optimizer": over["optimizer"], "dataset": {"samples": 1e9}},
        "model": model})


def predict(row, catalog=None):
    from reclaunch.planner import make_plan

    label, published, preset, over, itype, gpus, batch = row
    cat = catalog or bundled_catalog()
    offer = next(o for o in cat.offers if o.instance_type == itype and o.region == "us-east-1")
    offer = replace(offer, gpu_count=gpus)
    plan = make_plan(spec_for(preset, over, gpus, batch), cat, offer=offer, nodes=1)
    return plan, plan.throughput_samples_per_second / published
