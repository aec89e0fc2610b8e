from __future__ import annotations

from reclaunch.spec import Spec


def make_spec(**over) -> Spec:
    """A small valid AWS spec; keyword overrides merge into the top level / job / model."""
    job = {"image": "x", "command": ["python"], "batch_size": 4096, "precision": "bf16",
           "optimizer": "adam", "dataset": {"samples": 1e9, "epochs": 1}}
    job.update(over.pop("job", {}))
    m_over = over.pop("model", {})
    model = {"preset": "deepfm", "embedding_dim": 64,
             "tables": [{"name": "user_id", "rows": 1e6}, {"name": "item_id", "rows": 5e6}],
             "mlp": [1024, 1024, 512]}
    if m_over.get("preset") in ("dlrm", "dcnv2"):     # take the preset's own tables and shape
        model = {}
    model.update(m_over)
    data = {"name": "t", "cloud": "aws", "region": "us-east-1", "nodes": 1, "gpus_per_node": 8,
            "instance_type": "p4de.24xlarge", "job": job, "model": model}
    data.update(over)
    return Spec.model_validate(data)
