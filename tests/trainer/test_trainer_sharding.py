"""RECLAUNCH_SHARDING -> the plan the trainer executes (pure; no torchrec needed)."""
import json

import pytest

import sharding
from sharding import PlanError


def _doc(**over):
    doc = {"version": 1, "world_size": 4, "engine": "torchrec", "tables": [
        {"name": "user", "rows": 1000, "dim": 8, "feature": "user_id", "sharding_type": "table_wise",
         "compute_kernel": "fused", "ranks": [3]},
        {"name": "item", "rows": 500, "dim": 8, "feature": "item_id", "sharding_type": "row_wise",
         "compute_kernel": "fused", "ranks": [0, 1, 2, 3]},
        {"name": "hist", "rows": 500, "dim": 8, "feature": "hist", "sharding_type": "column_wise",
         "compute_kernel": "fused", "ranks": [1, 3], "sequence": True, "pooling_factor": 20},
        {"name": "cat", "rows": 10, "dim": 8, "sharding_type": "data_parallel", "compute_kernel": "dense",
         "ranks": []}]}
    doc.update(over)
    return doc


@pytest.mark.timeout(30)
def test_parse_keeps_every_field_of_the_contract():
    plan = sharding.parse(json.dumps(_doc()))
    assert plan.world_size == 4 and plan.source == "RECLAUNCH_SHARDING"
    user, item, hist, cat = plan.tables
    assert (user.sharding_type, user.ranks, user.feature, user.compute_kernel) == ("table_wise", [3], "user_id", "fused")
    assert item.ranks == [0, 1, 2, 3] and item.sharding_type == "row_wise"
    assert hist.sequence and hist.pooling_factor == 20 and hist.features == ["hist", "hist__target"]
    assert cat.feature == "cat" and cat.sharding_type == "data_parallel"
    assert [t.name for t in plan.pooled] == ["user", "item", "cat"] and [t.name for t in plan.sequences] == ["hist"]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("bad,match", [
    ("not json", "not JSON"),
    (json.dumps({"version": 2, "world_size": 1, "tables": []}), "version"),
    (json.dumps(_doc(engine="ddp")), "engine"),
    (json.dumps(_doc(tables=[])), "non-empty"),
    (json.dumps(_doc(tables=[{"name": "a", "rows": 5, "dim": 4, "sharding_type": "diagonal"}])), "diagonal"),
    (json.dumps(_doc(tables=[{"name": "a", "rows": 5, "dim": 4, "ranks": [0, 1]}])), "exactly one rank"),
    (json.dumps(_doc(tables=[{"name": "a", "rows": 5, "dim": 4, "ranks": [0], "compute_kernel": "uvm"}])), "uvm"),
    (json.dumps(_doc(tables=[{"name": "a", "rows": 5, "dim": 4, "ranks": [0]},
                             {"name": "a", "rows": 5, "dim": 4, "ranks": [1]}])), "duplicate"),
    (json.dumps(_doc(tables=[{"name": "a", "dim": 4, "ranks": [0]}])), "tables\\[0\\]"),
])
def test_bad_plans_are_one_clear_error(bad, match):
    with pytest.raises(PlanError, match=match):
        sharding.parse(bad)


@pytest.mark.timeout(30)
def test_elastic_world_change_rederives_ranks_and_says_so():
    plan = sharding.parse(json.dumps(_doc()))
    same = sharding.for_world(plan, 4, "cuda")
    assert same.notes == [] and [t.ranks for t in same.tables] == [[3], [0, 1, 2, 3], [1, 3], []]
    two = sharding.for_world(plan, 2, "cuda")
    assert two.tables[0].ranks == [1]                 # 3 % 2
    assert two.tables[1].ranks == [0, 1]              # ranks that still exist, in order
    assert two.tables[2].ranks == [1]
    assert "world_size=4" in two.notes[0] and "running on 2" in two.notes[0]
    assert plan.tables[0].ranks == [3]                # the parsed plan itself is untouched


@pytest.mark.timeout(30)
def test_cpu_runs_data_parallel_and_table_wise_only():
    plan = sharding.parse(json.dumps(_doc()))
    with pytest.raises(PlanError, match="item: row_wise needs CUDA"):
        sharding.for_world(plan, 4, "cpu")
    ok = sharding.parse(json.dumps(_doc(tables=[_doc()["tables"][0], _doc()["tables"][3]])))
    assert [t.sharding_type for t in sharding.for_world(ok, 4, "cpu").tables] == ["table_wise", "data_parallel"]


@pytest.mark.timeout(30)
def test_without_env_tables_go_table_wise_round_robin():
    plan = sharding.from_env({}, [10, 20, 30], 4, 2)
    assert plan.source == "fallback"
    assert [(t.name, t.rows, t.dim, t.sharding_type, t.ranks) for t in plan.tables] == [
        ("t0", 10, 4, "table_wise", [0]), ("t1", 20, 4, "table_wise", [1]), ("t2", 30, 4, "table_wise", [0])]
    din = sharding.from_env({}, [10, 20, 30], 4, 2, history_length=7)
    assert [t.sequence for t in din.tables] == [False, False, True] and din.tables[2].pooling_factor == 7
    env = sharding.from_env({"RECLAUNCH_SHARDING": json.dumps(_doc())}, [1], 4, 2)
    assert env.source == "RECLAUNCH_SHARDING" and len(env.tables) == 4
