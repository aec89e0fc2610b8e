"""Per-table sharding by modeled step time (issue 14): choice, pins, targets, contract."""

import json
from pathlib import Path

import pytest

from planner_helpers import make_spec
from reclaunch.catalog import bundled_catalog
from reclaunch.errors import SpecError
from reclaunch.manifests.env import job_env
from reclaunch.planner import make_plan
from reclaunch.planner.core import rate_sharding
from reclaunch.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
KINDS = {"data_parallel", "table_wise", "row_wise", "column_wise", "table_row_wise"}


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_never_picks_a_plan_it_says_is_slower(path):
    plan = make_plan(load_spec(path), bundled_catalog())
    sh = plan.sharding
    total = plan.step.total_seconds
    for kind, alt in sh.alternatives.items():
        assert alt is None or total <= alt * (1 + 1e-9), (kind, alt, total)
    assert not any("would be" in w and "faster" in w for w in plan.warnings)
    assert {t.sharding_type for t in sh.tables} <= KINDS
    assert plan.memory.parallelism == ("model" if sh.model_parallel else "data")
    # per-rank predictions add up to what the tables say they hold
    held = sum(r.memory_bytes for r in sh.per_rank)
    want = sum(t.memory_bytes_per_rank * (len(t.ranks) or plan.world_size) for t in sh.tables)
    assert held == pytest.approx(want, rel=1e-9)
    assert any("rule of thumb" in line for line in sh.explanation)
    assert any("stand on" in line for line in sh.explanation)


def test_deepfm_p4d_shards_its_tables_and_says_why():
    from reclaunch.ui.plan import render_plan

    plan = make_plan(load_spec(ROOT / "examples/aws-deepfm-p4d.yaml"), bundled_catalog())
    assert plan.memory.parallelism == "model"
    text = render_plan(plan, width=160)
    assert "sharding per table" in text and "predicted per rank" in text and "(slowest)" in text
    assert "item_id" in text and "rule of thumb" in text
    # all-reducing 1.45 GiB of table gradients over EFA every step is the slow plan (the
    # planned step itself waits for TorchRec's host work: planner/perf.py host_work)
    assert plan.sharding.alternatives["data_parallel"] > 5 * plan.step.total_seconds
    assert plan.step.allreduce_seconds < 0.5 * plan.step.total_seconds


def test_local_example_is_table_wise_over_its_two_ranks():
    plan = make_plan(load_spec(ROOT / "examples/local-deepfm.yaml"), bundled_catalog())
    types = {t.sharding_type for t in plan.sharding.tables}
    assert types == {"table_wise"}
    assert {r for t in plan.sharding.tables for r in t.ranks} == {0, 1}
    assert plan.sharding.stands_on["supported"] == ["data_parallel", "table_wise"]
    assert plan.min_nodes == plan.max_nodes == 2            # sharded: world size fixed


def test_cpu_target_never_plans_what_gloo_cannot_run():
    spec = make_spec(cloud="local", region=None, instance_type=None, nodes=2, gpus_per_node=2,
                     model={"tables": [{"name": "huge", "rows": 5e8}, {"name": "s", "rows": 10}]},
                     job={"batch_size": 256, "precision": "fp32"})
    plan = make_plan(spec, bundled_catalog())
    assert {t.sharding_type for t in plan.sharding.tables} <= {"data_parallel", "table_wise"}


def test_pin_the_target_cannot_run_is_bad_input():
    spec = make_spec(cloud="local", region=None, instance_type=None, nodes=2, gpus_per_node=1,
                     model={"sharding": "row_wise"}, job={"batch_size": 256, "precision": "fp32"})
    with pytest.raises(SpecError) as e:
        make_plan(spec, bundled_catalog())
    assert e.value.exit_code == 2 and "row_wise cannot run" in str(e.value)


def test_pins_are_kept_and_ranks_still_planned():
    tables = [{"name": "user_id", "rows": 1e6, "sharding": "row_wise"},
              {"name": "item_id", "rows": 5e6}, {"name": "tiny", "rows": 10, "sharding": "table_wise"}]
    plan = make_plan(make_spec(model={"tables": tables}), bundled_catalog())
    t = {x.name: x for x in plan.sharding.tables}
    assert t["user_id"].sharding_type == "row_wise" and t["user_id"].pinned
    assert t["user_id"].ranks == list(range(8))
    assert t["tiny"].sharding_type == "table_wise" and len(t["tiny"].ranks) == 1
    assert not t["item_id"].pinned
    allp = make_plan(make_spec(model={"sharding": "data"}), bundled_catalog())
    assert {x.sharding_type for x in allp.sharding.tables} == {"data_parallel"}
    assert all(x.compute_kernel == "dense" and x.ranks == [] for x in allp.sharding.tables)


def test_tiny_tables_stay_data_parallel_and_hot_ones_are_split():
    # DLRM one-hot on 2 x 8 H100: 3- to 155-row tables are cheaper replicated than sent (on the
    # GPU's path: a captured step, so the host issuing it does not set the pace).
    spec = load_spec(ROOT / "examples/aws-auto-h100.yaml")
    doc = spec.model_dump(mode="json", exclude_unset=True)
    doc["job"]["stack"] = "cuda-graph"
    plan = make_plan(type(spec).model_validate(doc), bundled_catalog())
    t = {x.name: x for x in plan.sharding.tables}
    assert all(t[n].sharding_type == "data_parallel" for n in ("cat_5", "cat_12", "cat_16"))
    big = t["cat_0"]
    assert big.sharding_type != "data_parallel"


def test_rating_a_given_plan_agrees_with_the_plan():
    spec = load_spec(ROOT / "examples/aws-deepfm-p4d.yaml")
    cat = bundled_catalog()
    plan = make_plan(spec, cat)
    mine = [(t.sharding_type, t.ranks, len(t.ranks) or plan.world_size) for t in plan.sharding.tables]
    assert rate_sharding(spec, mine, cat, plan.offer, plan.nodes).total == \
        pytest.approx(plan.step.total_seconds, rel=1e-9)
    dp = [("data_parallel", [], plan.world_size)] * len(mine)
    assert rate_sharding(spec, dp, cat, plan.offer, plan.nodes).total == \
        pytest.approx(plan.sharding.alternatives["data_parallel"], rel=1e-9)


def test_din_behaviour_sequence_is_marked():
    plan = make_plan(load_spec(ROOT / "examples/azure-din-nd96amsr.yaml"), bundled_catalog())
    seq = {t.name for t in plan.sharding.tables if t.sequence}
    assert seq == {"item_id", "category_id"}                 # pooling_factor 50: the history


def test_env_carries_the_contract():
    plan = make_plan(load_spec(ROOT / "examples/local-deepfm.yaml"), bundled_catalog())
    got = json.loads(job_env(plan)["RECLAUNCH_SHARDING"])
    assert got == plan.sharding.contract()
    assert got["world_size"] == 2 and got["engine"] == "torchrec" and got["version"] == 1
    assert [t["feature"] for t in got["tables"]] == ["user_id", "item_id", "category"]


def test_a_pin_this_cluster_cannot_build_falls_back_and_says_so():
    # table_row_wise needs several nodes; make_spec is one node of 8 GPUs, where TorchRec's
    # table_row_wise is row-wise over the host: that is what runs, and the plan says so
    tables = [{"name": "user_id", "rows": 1e6, "sharding": "table_row_wise"}]
    plan = make_plan(make_spec(model={"tables": tables}), bundled_catalog())
    assert plan.sharding.tables[0].sharding_type == "row_wise"
    assert any("table_row_wise cannot be built" in line and "row_wise instead" in line
               for line in plan.sharding.explanation)
    # column_wise of a dim no split divides (7): the closest executable thing, table_wise
    tables = [{"name": "user_id", "rows": 1e6, "dim": 7, "sharding": "column_wise"}]
    plan = make_plan(make_spec(model={"tables": tables}), bundled_catalog())
    assert plan.sharding.tables[0].sharding_type == "table_wise"
    assert any("column_wise cannot be built" in line for line in plan.sharding.explanation)


def test_fused_kernel_only_where_fbgemm_takes_the_width():
    # A dim that is not a multiple of 4 (the DIN paper's 18): FBGEMM's fused TBE asserts at
    # start-up (torchrec batched_embedding_kernel._assert_local_cols_divisible_by_4), so those
    # tables get the dense kernel; DeepFM's dim 16 keeps fused on every sharded table
    root = Path(__file__).resolve().parents[2] / "examples"
    spec = load_spec(root / "azure-din-nd96amsr.yaml")
    spec = spec.model_copy(update={"model": spec.model.model_copy(update={"embedding_dim": 18})})
    din = make_plan(spec, bundled_catalog()).sharding
    assert din.tables and all(t.dim % 4 and t.compute_kernel == "dense" for t in din.tables)
    p4d = make_plan(load_spec(root / "aws-deepfm-p4d.yaml"), bundled_catalog()).sharding
    assert all(t.compute_kernel == ("dense" if t.sharding_type == "data_parallel" else "fused")
               for t in p4d.tables)


def test_tiny_tables_are_never_split_and_rows_bound_the_shards():
    # DLRM's 26 Criteo tables on one 8 x A100-40GB node at batch 2048 (issue 21: the earlier
    # search column-split the 3-, 4- and 10-row tables there)
    from reclaunch.planner.constants import constants

    tiny = constants()["sharding"]["split_min_rows"]
    for nodes in (1, 2):
        spec = make_spec(instance_type="p4d.24xlarge", nodes=nodes, model={"preset": "dlrm"},
                         job={"batch_size": 2048, "optimizer": "adagrad"})
        plan = make_plan(spec, bundled_catalog())
        t = {x.name: x for x in plan.sharding.tables}
        assert all(t[n].sharding_type in ("data_parallel", "table_wise") for n in ("cat_5", "cat_16", "cat_12"))
        for x in plan.sharding.tables:
            if x.rows < tiny:
                assert x.sharding_type in ("data_parallel", "table_wise"), (x.name, x.rows, x.sharding_type)
            if x.sharding_type == "row_wise":
                assert x.rows >= plan.world_size


def test_every_planned_table_is_one_its_module_and_the_trainer_can_build():
    import sys
    sys.path.insert(0, str(ROOT / "examples" / "trainer"))
    import sharding as trainer
    from reclaunch.spec.sharders import KERNELS, module_kinds

    for path in EXAMPLES:
        spec = load_spec(path)
        plan = make_plan(spec, bundled_catalog())
        for x, t in zip(plan.sharding.tables, spec.model.tables):
            assert x.sharding_type in module_kinds(spec.model, t), (path.stem, x.name)
            assert x.compute_kernel in KERNELS[x.sharding_type], (path.stem, x.name, x.compute_kernel)
            assert x.sharding_type in trainer.SHARDING_TYPES and x.compute_kernel in trainer.KERNELS
    din = make_plan(load_spec(ROOT / "examples/azure-din-nd96amsr.yaml"), bundled_catalog())
    seq = [x for x in din.sharding.tables if x.sequence]
    assert seq and all(x.sharding_type != "table_row_wise" for x in seq)
    assert any("EmbeddingCollection" in line for line in din.sharding.explanation)


def test_table_row_wise_only_where_the_fused_kernel_runs():
    # trainer: torchrec's table_row_wise() takes no kernel and picks fused (optimizer in
    # backward); FBGEMM's fused kernel needs a width divisible by 4, so dim 18 never gets it
    tables = [{"name": "a", "rows": 5e7, "dim": 18}, {"name": "b", "rows": 5e7, "dim": 16}]
    plan = make_plan(make_spec(nodes=4, model={"tables": tables}), bundled_catalog())
    a = plan.sharding.tables[0]
    assert a.sharding_type != "table_row_wise" and a.compute_kernel in ("dense", "fused")
    assert a.compute_kernel == ("dense" if a.sharding_type == "data_parallel" or a.dim % 4 else "fused")


def test_a_sequence_pin_built_in_code_is_refused_at_plan_time():
    from reclaunch.spec import Spec

    spec = load_spec(ROOT / "examples/azure-din-nd96amsr.yaml")
    doc = spec.model_dump(mode="json")
    doc["model"]["tables"][1]["sharding"] = "table_row_wise"
    with pytest.raises(SpecError) as e:
        make_plan(Spec.model_validate(doc), bundled_catalog())      # no cross_check on this path
    assert e.value.exit_code == 2 and "EmbeddingCollection" in str(e.value)
