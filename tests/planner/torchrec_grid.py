"""TorchRec 1.8's own sharding proposal for a reclaunch spec, and the grid it is compared on.

Used by test_torchrec_planner.py (a bounded grid) and bench/bench_sharding_vs_torchrec.py (the
wide sweep). TorchRec's EmbeddingShardingPlanner plans on the meta device, no GPU needed:
pooled tables in an EmbeddingBagCollection, DIN's behaviour-sequence tables in an
EmbeddingCollection (the reference trainer's modules, examples/trainer/rec_model.py), each with
TorchRec's own sharder, the embedding optimizer applied in backward as the trainer does.
TorchRec may only pick sharding types reclaunch executes (no table_column_wise / grid_shard),
so the comparison is between two planners choosing from the same menu.
"""

from __future__ import annotations

import logging

from reclaunch.catalog import bundled_catalog
from reclaunch.planner import make_plan
from reclaunch.planner.core import rate_sharding
from reclaunch.spec import Spec
from reclaunch.spec.sharders import is_sequence, module_kinds

GIB = 1 << 30
# One instance per GPU memory size the grid covers (AWS: one fabric for all, EFA).
INSTANCES = {40: "p4d.24xlarge", 80: "p5.48xlarge", 141: "p5en.48xlarge"}

# Table sets: the examples' (DeepFM, DIN) and the presets' MLPerf Criteo 1TB ones (DLRM
# one-hot, DCNv2 multi-hot), each with the optimizer its reference setup uses.
MODELS: dict[str, dict] = {
    "dlrm": {"model": {"preset": "dlrm"}, "optimizer": "adagrad"},
    "dcnv2": {"model": {"preset": "dcnv2"}, "optimizer": "adagrad"},
    "deepfm": {"model": {"preset": "deepfm", "embedding_dim": 64, "mlp": [1024, 1024, 512],
                         "tables": [{"name": "user_id", "rows": 1e6}, {"name": "item_id", "rows": 5e6},
                                    {"name": "category", "rows": 20_000}, {"name": "city", "rows": 50_000}]},
               "optimizer": "adam"},
    "din": {"model": {"preset": "din",
                      "tables": [{"name": "user_id", "rows": 20e6},
                                 {"name": "item_id", "rows": 10e6, "pooling_factor": 50},
                                 {"name": "category_id", "rows": 10_000, "pooling_factor": 50},
                                 {"name": "shop_id", "rows": 500_000}]},
            "optimizer": "adagrad"},
}


def grid_spec(model: str, gpu_gib: int, batch: int, nodes: int) -> Spec:
    m = MODELS[model]
    return Spec.model_validate({
        "name": f"{model}-{gpu_gib}-{batch}-{nodes}", "cloud": "aws", "region": "us-east-1",
        "nodes": nodes, "gpus_per_node": 8, "instance_type": INSTANCES[gpu_gib],
        "job": {"image": "x", "command": ["x"], "batch_size": batch, "precision": "bf16",
                "optimizer": m["optimizer"], "dataset": {"samples": 1e9}},
        "model": m["model"]})


def pinned(spec: Spec, kinds: dict[str, str]) -> Spec:
    """`spec` with every table's `sharding:` pinned (what a user writes to force a plan)."""
    tables = [t.model_copy(update={"sharding": kinds[t.name]}) for t in spec.model.tables]
    return spec.model_copy(update={"model": spec.model.model_copy(update={"tables": tables})})


def _modules(spec: Spec):
    import torch
    from torchrec import EmbeddingBagCollection, EmbeddingBagConfig, EmbeddingCollection, EmbeddingConfig
    from torchrec.optim.apply_optimizer_in_backward import apply_optimizer_in_backward

    m = spec.model
    meta = torch.device("meta")
    pooled = [t for t in m.tables if not is_sequence(m, t)]
    seq = [t for t in m.tables if is_sequence(m, t)]
    root = torch.nn.Module()
    if pooled:
        root.ebc = EmbeddingBagCollection(tables=[EmbeddingBagConfig(
            name=t.name, embedding_dim=int(t.dim or m.embedding_dim), num_embeddings=int(t.rows),
            feature_names=[t.name]) for t in pooled], device=meta)
    if seq:
        root.ec = EmbeddingCollection(tables=[EmbeddingConfig(
            name=t.name, embedding_dim=int(t.dim or m.embedding_dim), num_embeddings=int(t.rows),
            feature_names=[t.name]) for t in seq], device=meta)
    opt = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}.get(spec.job.optimizer, torch.optim.Adagrad)
    apply_optimizer_in_backward(opt, root.parameters(), {"lr": 0.01})
    return root


def torchrec_proposal(spec: Spec) -> dict[str, tuple[str, list[int]]]:
    """table -> (sharding type, ranks) as TorchRec 1.8's EmbeddingShardingPlanner proposes it."""
    from torchrec.distributed.embedding import EmbeddingCollectionSharder
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from torchrec.distributed.planner import EmbeddingShardingPlanner, ParameterConstraints, Topology

    logging.getLogger("torchrec").setLevel(logging.ERROR)
    cat = bundled_catalog()
    inst = cat.instance(spec.cloud, spec.instance_type)
    m = spec.model
    cons = {t.name: ParameterConstraints(
        sharding_types=list(module_kinds(m, t)), pooling_factors=[float(t.pooling_factor)])
        for t in m.tables}
    topo = Topology(world_size=spec.nodes * spec.gpus_per_node, compute_device="cuda",
                    hbm_cap=int(inst.gpu_memory_gib * GIB), local_world_size=spec.gpus_per_node)
    planner = EmbeddingShardingPlanner(topology=topo, batch_size=spec.job.batch_size,
                                       constraints=cons, debug=False)
    got = planner.plan(_modules(spec), [EmbeddingBagCollectionSharder(), EmbeddingCollectionSharder()])
    out = {}
    for per_table in got.plan.values():
        for name, ps in per_table.items():
            out[name] = ours(ps.sharding_type, list(ps.ranks or []), spec.nodes)
    return out


def ours(kind: str, ranks: list[int], nodes: int) -> tuple[str, list[int]]:
    """TorchRec's (type, ranks) in the terms reclaunch plans: a column_wise plan of one shard
    (TorchRec's default column shard is 128 wide, so a dim-128 table gets one) is the whole
    table on one rank, table_wise; table_row_wise on one host is row_wise over it."""
    if kind == "column_wise" and len(ranks) == 1:
        return "table_wise", ranks
    if kind == "table_row_wise" and nodes == 1:
        return "row_wise", ranks
    return kind, ranks


def compare(model: str, gpu_gib: int, batch: int, nodes: int):
    """(our Eval-backed plan, TorchRec's proposal rated by our model, the proposal)."""
    spec = grid_spec(model, gpu_gib, batch, nodes)
    cat = bundled_catalog()
    plan = make_plan(spec, cat)
    prop = torchrec_proposal(spec)
    assignment = []
    for t in spec.model.tables:
        kind, ranks = prop[t.name]
        assignment.append((kind, ranks, max(1, len(ranks))))
    theirs = rate_sharding(spec, assignment, cat, plan.offer, plan.nodes)
    return plan, theirs, prop
