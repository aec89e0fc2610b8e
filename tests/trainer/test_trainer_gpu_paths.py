"""Issue 22 on CPU: what the spec says reaches the model (precision, table dtype, optimizer
arguments, LR schedule, clipping), the TorchRec train pipeline, the plan pre-check, multi-hot data."""
import json
import os
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import data
import precision
import schedule
import sharding
from model import FusedEmbeddingBag

TINY = ["--table-rows", "60,40,30", "--embedding-dim", "4", "--mlp", "16,8", "--bottom-mlp", "8",
        "--batch-size", "16"]


def _env_clean(monkeypatch):
    for key in list(os.environ):
        if key.startswith(("RECLAUNCH_", "TORCHELASTIC_")) or key in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
            monkeypatch.delenv(key)


def _engine(monkeypatch, *argv, sharding_json=None):
    """A RecEngine built in this process (one rank, gloo) from trainer flags."""
    pytest.importorskip("torchrec")
    import train

    _env_clean(monkeypatch)
    if sharding_json:
        monkeypatch.setenv("RECLAUNCH_SHARDING", sharding_json)
    args = train.parse_config(list(argv))
    d = train.Dist(0, 1, 0, torch.device("cpu"), 0)
    lines = []
    engine, plan = train.make_engine(args, d, lines.append)
    return engine, plan, lines


def _tbes(engine):
    """FBGEMM's TBE modules inside the sharded modules' lookups (not registered submodules)."""
    from torchrec.distributed.types import ShardedModule

    out = []
    for m in engine.model.modules():
        if isinstance(m, ShardedModule):
            for lookup in m._lookups:
                out += [em._emb_module for em in getattr(lookup, "module", lookup)._emb_modules]
    return out


@pytest.mark.timeout(60)
def test_precision_rules_per_engine_and_device():
    p = precision.resolve("bf16", "fp16", "torchrec", "cuda", apply=False)
    assert p.autocast_dtype == torch.bfloat16 and p.tf32 and p.output_dtype == "bf16"
    assert p.qcomms == ("FP16", "BF16") and p.table_dtype == "fp16"       # the golden example's qcomms
    assert precision.resolve("tf32", "fp32", "torchrec", "cuda", apply=False).autocast_dtype is None
    assert precision.resolve("tf32", "fp32", "torchrec", "cuda", apply=False).tf32
    assert not precision.resolve("fp32", "fp32", "ddp", "cuda", apply=False).tf32
    assert precision.resolve("bf16", "fp32", "torchrec", "cuda", "off", apply=False).qcomms is None
    with pytest.raises(precision.PrecisionError, match="loss-scaled gradients"):
        precision.resolve("fp16", "fp32", "torchrec", "cuda", apply=False)
    with pytest.raises(precision.PrecisionError, match="int8"):
        precision.resolve("bf16", "int8", "torchrec", "cuda", apply=False)
    with pytest.raises(precision.PrecisionError, match="CPU"):
        precision.resolve("bf16", "bf16", "torchrec", "cpu", apply=False)
    cpu = precision.resolve("bf16", "fp32", "torchrec", "cpu", apply=False)
    assert cpu.autocast_dtype is None and "CPU trains in fp32" in cpu.notes[0]


@pytest.mark.timeout(120)
def test_table_dtype_and_optimizer_arguments_reach_the_sharded_tables(monkeypatch):
    engine, _, lines = _engine(monkeypatch, *TINY, "--embedding-dtype", "fp16", "--optimizer", "adagrad",
                               "--eps", "1e-5", "--weight-decay", "0.01", "--lr", "0.2")
    tbes = _tbes(engine)
    assert tbes, "no FBGEMM TBE in the sharded model"
    for tbe in tbes:     # what FBGEMM was actually built with
        assert tbe.weights_precision.name == "FP16"
        assert tbe.optimizer_args.eps == pytest.approx(1e-5) and tbe.optimizer_args.weight_decay == pytest.approx(0.01)
        assert tbe.get_learning_rate() == pytest.approx(0.2)
    weights = [v for k, v in engine.model.state_dict().items() if k.endswith(".weight") and "embedding_bags" in k]
    assert weights and all(w.dtype == torch.float16 for w in weights)
    assert "table_dtype=fp16" in engine.describe()
    # the LR schedule drives the fused optimizer too: warmup step 1 of 4 -> a quarter, and the
    # TBEs have it before step 1's backward (they update the rows inside it), not one step later
    engine.args.warmup_steps = 4
    assert engine.set_lr(1) == pytest.approx(0.05)
    assert all(g["lr"] == pytest.approx(0.05) for g in engine.model.fused_optimizer.param_groups)
    assert [tbe.get_learning_rate() for tbe in tbes] == pytest.approx([0.05] * len(tbes))


@pytest.mark.timeout(60)
def test_lr_schedule_is_the_dlrm_reference_policy():
    assert [schedule.lr_scale(s, 4, 0, 0) for s in (1, 2, 4, 10)] == [0.25, 0.5, 1.0, 1.0]
    assert schedule.lr_scale(10, 2, 10, 4) == 1.0 and schedule.lr_scale(12, 2, 10, 4) == 0.25
    assert schedule.lr_scale(20, 2, 10, 4) == 0.0
    args = SimpleNamespace(warmup_steps=0, decay_start=10, decay_steps=4)
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    assert schedule.set_lr([opt], 1.0, 30, args) == schedule.MIN_LR == opt.param_groups[0]["lr"]
    assert schedule.fused_kwargs("adam", 0.1, SimpleNamespace(weight_decay=0.0, eps=1e-8, betas=[0.8, 0.9])) == \
        ({"lr": 0.1, "weight_decay": 0.0, "eps": 1e-8}, {"beta1": 0.8, "beta2": 0.9})


@pytest.mark.timeout(120)
def test_data_parallel_tables_get_the_row_sparse_update_and_the_mlps_are_clipped(monkeypatch):
    from torchrec.optim.clipping import GradientClippingOptimizer

    tables = [{"name": "a", "rows": 60, "dim": 4, "sharding_type": "data_parallel", "compute_kernel": "dense"},
              {"name": "b", "rows": 40, "dim": 4, "sharding_type": "table_wise", "ranks": [0]}]
    plan = json.dumps({"version": 1, "world_size": 1, "tables": tables})
    engine, _, _ = _engine(monkeypatch, *TINY, "--optimizer", "adagrad", "--grad-clip", "0.5", sharding_json=plan)
    assert [n.split(".")[-2] for n in engine.dp_tables] == ["a"]
    row_sparse = engine.row_sparse[0]
    assert [p.shape for g in row_sparse.param_groups for p in g["params"]] == [torch.Size([60, 4])]
    assert any(isinstance(o, GradientClippingOptimizer) for _, o in engine.optimizer.optimizers)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("model", ["dlrm", "din"])
def test_train_pipeline_runs_and_matches_the_plain_loop(monkeypatch, capsys, model):
    """TorchRec's TrainPipelineSparseDist on CPU: the sharded modules' input dist is rewired
    (it runs a batch ahead), and the training is the same math as the plain loop."""
    import train

    common = [*TINY, "--model", model, "--optimizer", "adagrad", "--steps", "6", "--log-every", "2",
              "--history-length", "4", "--seed", "3"]
    losses = {}
    for kind in ("sparse_dist", "off"):
        _env_clean(monkeypatch)
        assert train.main([*common, "--pipeline", kind]) == 0
        out = capsys.readouterr().out
        losses[kind] = [line.split()[1] for line in out.splitlines() if line.startswith("step=")]
        expect = "pipeline=TrainPipelineSparseDist" if kind == "sparse_dist" else "pipeline=off"
        assert expect in out
    assert losses["sparse_dist"] == losses["off"] and len(losses["off"]) == 3
    engine, _, _ = _engine(monkeypatch, *common, "--pipeline", "sparse_dist")
    src = data.SyntheticCriteo([t.rows for t in engine.plan.pooled], 16, 3,
                               sequences=[(t.rows, 4) for t in engine.plan.sequences])
    it = iter(data.loader(src, 0, transform=engine.transform()))
    engine.pipeline_step(it)
    names = sorted(type(m).__name__ for m in engine.pipeline._pipelined_modules)
    assert "ShardedEmbeddingBagCollection" in names
    assert ("ShardedEmbeddingCollection" in names) == (model == "din")


@pytest.mark.timeout(120)
def test_pipeline_refuses_gradient_accumulation(monkeypatch):
    with pytest.raises(SystemExit, match="--grad-accum 2 needs --pipeline off"):
        _engine(monkeypatch, *TINY, "--optimizer", "sgd", "--grad-accum", "2", "--pipeline", "sparse_dist")
    engine, _, _ = _engine(monkeypatch, *TINY, "--optimizer", "sgd", "--grad-accum", "2")
    assert engine.pipeline is None          # auto: the plain loop accumulates


def _table(name, kind, rows=1000, dim=8, ranks=(), seq=False):
    return sharding.Table(name=name, rows=rows, dim=dim, feature=name, sharding_type=kind, ranks=list(ranks),
                          pooling_factor=5.0 if seq else 1.0, sequence=seq)


@pytest.mark.timeout(120)
def test_prebuild_check_refuses_a_plan_the_sharder_or_the_gpu_cannot_take():
    pytest.importorskip("torchrec")
    import plancheck
    import rec_model
    from torchrec.distributed.embedding import EmbeddingCollectionSharder
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder

    sharders = [EmbeddingBagCollectionSharder(), EmbeddingCollectionSharder()]
    plan = sharding.Plan([_table("u", "table_wise", ranks=[0]), _table("item", "table_row_wise", seq=True, ranks=[0])],
                         8, "test")
    model = rec_model.build("din", plan, [8], [8], 1, 0, [8], torch.device("meta"))
    sparse = rec_model.sparse_modules(model)
    with pytest.raises(sharding.PlanError, match=r"table item: sharding_type table_row_wise is not supported by "
                                                 r"EmbeddingCollectionSharder .*supports data_parallel"):
        plancheck.check(plan, sparse, sharders, torch.device("cuda"), 8, "adam", "fp32", free_bytes=2**40)
    ok = sharding.Plan([_table("u", "table_wise", ranks=[0]), _table("item", "row_wise", seq=True)], 8, "test")
    model = rec_model.build("din", ok, [8], [8], 1, 0, [8], torch.device("meta"))
    sparse = rec_model.sparse_modules(model)
    plancheck.check(ok, sparse, sharders, torch.device("cuda"), 8, "adam", "fp32", free_bytes=2**40, rank=0)
    # HBM: 1e9 rows x 128 fp32 + Adam state on one rank cannot fit 80 GB
    big = sharding.Plan([_table("u", "table_wise", rows=10**9, dim=128, ranks=[0])], 8, "test")
    model = rec_model.build("deepfm", big, [8], [8], 1, 0, [8], torch.device("meta"))
    with pytest.raises(sharding.PlanError, match=r"rank 0: the plan puts 1430.5 GiB of fp32 tables \+ adam state"):
        plancheck.check(big, rec_model.sparse_modules(model), sharders, torch.device("cuda"), 8, "adam", "fp32",
                        free_bytes=80 * 2**30, rank=0)
    plancheck.check(big, rec_model.sparse_modules(model), sharders, torch.device("cuda"), 8, "adam", "fp32",
                    free_bytes=80 * 2**30, rank=1)   # the table lives on rank 0 only


@pytest.mark.timeout(60)
def test_multi_hot_batches_have_the_planned_pooling():
    pytest.importorskip("torchrec")
    import rec_model

    plan = sharding.Plan([_table("a", "table_wise", rows=50, ranks=[0]),
                          sharding.Table("b", 30, 8, "b", "table_wise", ranks=[0], pooling_factor=7.0)], 1, "t")
    src = data.SyntheticCriteo([50, 30], 32, seed=1)
    raw = tuple(torch.from_numpy(a) for a in src.batch(0))
    batch = rec_model.ToBatch(plan)(raw)
    kjt = batch.sparse_features
    assert kjt["a"].lengths().tolist() == [1] * 32 and kjt["b"].lengths().tolist() == [7] * 32
    b_ids = kjt["b"].values().view(32, 7)
    assert torch.equal(b_ids[:, 0], raw[1][:, 1]) and int(b_ids.max()) < 30 and int(b_ids.min()) >= 0
    assert torch.equal(rec_model.ToBatch(plan)(raw).sparse_features["b"].values(), kjt["b"].values())  # deterministic
    assert len(set(b_ids[:, 1:].flatten().tolist())) > 10          # the extra ids spread over the table
    # the same ids in the ddp engine's layout, and its bag sums them per table
    ids = data.MultiHot([50, 30], [1, 7])(raw)[1]
    assert ids.shape == (32, 8) and torch.equal(ids[:, 1:], b_ids)
    bag = FusedEmbeddingBag([50, 30], 4, pooling=[1, 7])
    out = bag(ids)
    w = bag.weight.detach()
    assert torch.allclose(out[:, 1], w[50 + ids[:, 1:]].sum(1), atol=1e-6)
    assert torch.allclose(out[:, 0], w[ids[:, 0]], atol=1e-6)


@pytest.mark.timeout(60)
def test_multi_hot_matches_the_mlperf_layout():
    ids = np.array([0, 5, 5, 9])
    mh = data.multi_hot(ids, 10, 4, table=2)
    assert mh.shape == (4, 4) and (mh[:, 0] == ids).all() and (mh[1] == mh[2]).all()   # tied to the id
    assert (mh >= 0).all() and (mh < 10).all()
    assert (data.multi_hot(ids, 10, 1, 0) == ids[:, None]).all()


@pytest.mark.timeout(60)
def test_process_group_gets_a_timeout_and_the_users_nccl_debug_stays(monkeypatch):
    import metrics
    import train

    seen = {}
    monkeypatch.setattr(train.dist, "init_process_group", lambda *a, **kw: seen.update(args=a, **kw))
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.delenv("TORCHELASTIC_USE_AGENT_STORE", raising=False)
    train.init_distributed(3.0)
    assert seen["timeout"].total_seconds() == 180 and seen["args"] == ("gloo",)
    env = {"NCCL_DEBUG": "WARN"}
    assert metrics.setup_nccl_log(env) is None and env == {"NCCL_DEBUG": "WARN"}
