"""`reclaunch schema`: the JSON Schema editors read, with a description on every field, the
standard keywords (exclusiveMinimum, maximum, ...) and the known GPU names as an enum.

The descriptions live here, beside the models (models.py keeps the ones it had), so the
contract file stays readable; a test checks every field has one. Those that list what the
clouds offer (targets, storage kinds, reservations) are made from the registry (_registered).
"""

from __future__ import annotations

from typing import Any

DOCS: dict[str, str] = {
    "Spec.region": "Cloud region (e.g. us-east-1, eastus, us-central1); it must sell the instance",
    "Spec.zones": "Zones to try in order (capacity fallback); empty: the stack picks",
    "Spec.nodes": "Nodes (instances) at the start; cloud: local: simulated nodes",
    "Spec.gpus_per_node": "GPUs per node (cloud: local: training processes per simulated node)",
    "Spec.gpu": "GPU model, e.g. H100-80GB or just H100; the planner picks the cheapest instance",
    "Spec.instance_type": "Exact instance type (e.g. p4d.24xlarge); instead of or as well as gpu",
    "Spec.namespace": "Kubernetes namespace for the job",
    "Spec.interconnect": "Links within and between nodes",
    "Spec.storage": "Shared storage every node mounts (datasets, checkpoints)",
    "Spec.spot": "Spot/preemptible capacity and what to do when there is none",
    "Spec.autoscaling": "Elastic node count (min..max); the job resizes on reclaims",
    "Spec.capacity": "Reserved capacity (ODCR, Capacity Block, GCP reservation, Azure CRG)",
    "Spec.security": "Who may reach the Kubernetes API; host encryption; bucket grants",
    "Security.bucket_grants": (
        "Who gives the job's identity its rights on a bucket you name (not storage.kind: "
        "bucket). stack: `up` does; on azure that needs storage.existing set to the storage "
        "account's resource id, and validate refuses without it. manual: where the stack "
        "cannot, you grant them yourself once `up` has made the identity (it says which)"),
    "Spec.job": "The training job: image, command, batch, precision, checkpoints, dataset",
    "Spec.model": "The recommender model the planner sizes and the trainer builds",
    "Spec.nccl": "Extra NCCL settings on top of the fabric profile",
    "Spec.teardown": "When the cluster goes away after the job",
    "Spec.budget": "A spending limit `up` checks against the plan",
    "Autoscaling.min_nodes": "Fewest nodes the job keeps running with",
    "Autoscaling.max_nodes": "Most nodes the pool grows to",
    "Budget.max_usd": "Whole-job USD limit; `up` refuses a plan over it without --force",
    "Checkpoint.path": "Where checkpoints go; relative paths live on the storage mount",
    "Checkpoint.every_minutes": "Minutes between checkpoints (what a reclaim can lose, half of it on average)",
    "Checkpoint.expire_days": ("storage.kind bucket only: the bucket deletes checkpoints this many "
                               "days after they were written (default: never)"),
    "Dataset.samples": "Training samples per epoch, e.g. 4.2e9",
    "Dataset.epochs": "Passes over the dataset (may be fractional)",
    "Interconnect.inter_node": "Network between nodes; auto picks the instance's (efa, infiniband, tcpx, tcpxo)",
    "Job.image": "Container image with the trainer (required on clouds)",
    "Job.command": "Entry point, e.g. [python, /app/train.py]",
    "Job.args": "Arguments after the command",
    "Job.env": "Environment variables for every training process (these win over reclaunch's)",
    "Job.grad_accumulation": "Micro-batches per optimizer step",
    "Job.precision": "Dense compute precision: fp32, tf32, fp16, bf16",
    "Job.optimizer": "Optimizer (sizes optimizer state in the memory plan)",
    "Job.checkpoint": "Checkpoint path and interval",
    "Job.dataset": "Dataset size the duration and cost are computed from",
    "Job.max_restarts": "Restarts torchrun allows; the same failure twice in a row stops earlier",
    "Job.stack": ("The training software the step time assumes: torchrec (the reference trainer), "
                  "cuda-graph, hugectr, per-feature, per-feature-compiled (spec/stacks.py); sets execution, "
                  "embedding_overlap and gradient_dtype (each of them given too wins)"),
    "Job.execution": "eager, or cuda_graph when the trainer captures the step (fewer kernel launches)",
    "Job.gradient_dtype": "Dense gradients on the wire: fp32, or fp16/bf16 when all-reduced in half precision",
    "Job.embedding_overlap": ("input (the reference trainer: TorchRec TrainPipelineSparseDist), or full when "
                              "the trainer runs embedding lookups and their all-to-all beside the dense "
                              "compute (HugeCTR train_intra/inter_iteration_overlap)"),
    "SecretRef.secret": "Name of a Kubernetes Secret in the job's namespace",
    "SecretRef.key": "Key in that Secret whose value the variable gets",
    "Model.preset": "deepfm, dcnv2, din, dlrm, wide_deep (fills the rest), or custom",
    "Model.embedding_dim": "Embedding dimension of every table without its own dim",
    "Model.embedding_dtype": "Storage type of embedding rows",
    "Model.mlp": "Deep / top MLP layer sizes",
    "Model.bottom_mlp": "Bottom MLP over dense features (DLRM, DCNv2)",
    "Model.dense_features": "Number of dense (continuous) input features",
    "Model.cross_layers": "DCNv2 cross layers",
    "Model.cross_low_rank": "DCNv2 low-rank cross dimension (null: full rank)",
    "Model.attention_mlp": "DIN attention MLP sizes (the job gets RECLAUNCH_ATTENTION_MLP)",
    "Nccl.env": "NCCL_* variables added to (and overriding) the fabric profile's",
    "Nccl.debug": "NCCL_DEBUG level: WARN, or INFO for `diagnose` to read transports",
    "Spot.enabled": "Run on spot/preemptible instances (needs shared storage for checkpoints)",
    "Spot.fallback": "on-demand: fall back when no spot capacity; none: wait",
    "Storage.mount_path": "Where every training container sees the storage",
    "Storage.storage_class": "StorageClass for kind pvc (default: the cluster's)",
    "Table.name": "Table (feature) name; unique in the model",
    "Table.rows": "Rows (vocabulary size), e.g. 40e6",
    "Table.dim": "This table's embedding dimension (default: model.embedding_dim)",
    "Teardown.when": "on_success, on_completion (success or failure), or never",
    "Teardown.idle_minutes": "A cluster kept up with no job goes after this long",
    "Teardown.keep_on_failure": "Keep a failed cluster for debugging (until idle_minutes)",
}
# pydantic's constraint names -> the JSON Schema keywords editors understand.
KEYWORDS = {"gt": "exclusiveMinimum", "ge": "minimum", "lt": "exclusiveMaximum", "le": "maximum"}


def _standard(node: Any) -> Any:
    if isinstance(node, dict):
        return {KEYWORDS.get(k, k): _standard(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_standard(v) for v in node]
    return node


# What a target of each kind is, for the `cloud` description (reclaunch/clouds.py kinds).
KINDS = {"kube": "a cluster reclaunch creates", "own": "a cluster you already have",
         "here": "this machine, CPU processes, no account"}


def _listed(items: list[tuple[str, str | None]]) -> str:
    """'a, b (x), c' from (name, note) pairs: each run of names with one note gets it once."""
    out: list[str] = []
    for i, (name, note) in enumerate(items):
        last = i + 1 == len(items) or items[i + 1][1] != note
        out.append(f"{name} ({note})" if note and last else name)
    return ", ".join(out)


def _registered() -> dict[str, str]:
    """The descriptions that list what the registered clouds offer."""
    from reclaunch import clouds

    facts = list(clouds.all_facts())
    groups = [_listed([(f.name, note) for f in facts if f.kind == kind])
              for kind, note in KINDS.items() if any(f.kind == kind for f in facts)]
    head, tail = ", ".join(groups[:-1]), groups[-1]
    owners = {k: [f.name for f in facts if k in {s.name for s in f.storage}] for k in clouds.storage_kinds()}
    reservations = [(r.name, f.name) for f in facts for r in f.reservation_kinds]
    return {
        "Spec.cloud": f"Where the job runs: {head} or {tail}" if head else f"Where the job runs: {tail}",
        "Storage.kind": _listed([(k, o[0] if len(o) == 1 else None) for k, o in owners.items()]),
        "Capacity.kind": f"What was bought: {_listed(reservations)}",
        "Capacity.reservation": "Its id on the cloud, by kind: " + "; ".join(
            f"{r.name}: e.g. {r.example}" for f in facts for r in f.reservation_kinds),
    }


def finish(schema: dict, gpus: list[str]) -> dict:
    schema = _standard(schema)
    models = {"Spec": schema, **schema.get("$defs", {})}
    docs = {**DOCS, **_registered()}
    for model, body in models.items():
        for field, prop in body.get("properties", {}).items():
            if "description" not in prop and f"{model}.{field}" in docs:
                prop["description"] = docs[f"{model}.{field}"]
    from reclaunch import clouds

    schema["properties"]["cloud"]["enum"] = list(clouds.names())
    models["Capacity"]["properties"]["kind"]["enum"] = list(clouds.reservation_kinds())
    models["Storage"]["properties"]["kind"]["enum"] = list(clouds.storage_kinds())
    inter = models["Interconnect"]["properties"]["inter_node"]
    inter["enum"] = ["auto", *clouds.selectable_fabrics()]
    gpu = schema["properties"]["gpu"]
    # Known names complete in editors; the short forms (h100, A100) still validate.
    gpu["anyOf"] = [{"enum": sorted(gpus)}, {"type": "string"}, {"type": "null"}]
    gpu.pop("type", None)
    return schema
