import pytest

from planner_helpers import make_spec
from reclaunch.catalog import bundled_catalog
from reclaunch.planner import make_plan
from reclaunch.planner.memory import (GIB, MIB, dense_shape, optimizer_state_bytes, plan_memory,
                                      table_bytes)


def test_seed_numbers():
    assert table_bytes(1_000_000, 64, "fp32") / MIB == pytest.approx(244.14, abs=0.01)
    assert round(table_bytes(5_000_000, 64, "fp32") / GIB, 2) == 1.19
    assert table_bytes(1_000_000, 64, "bf16") == table_bytes(1_000_000, 64) // 2


@pytest.mark.parametrize("opt,mult", [("sgd", 0), ("adagrad", 1), ("adam", 2)])
def test_optimizer_state(opt, mult):
    assert optimizer_state_bytes(1000 * 64 * 4, opt, 64) == mult * 1000 * 64 * 4


def test_rowwise_adagrad_is_one_over_dim():
    assert optimizer_state_bytes(1000 * 64 * 4, "rowwise_adagrad", 64) == 1000 * 4


def test_mlp_params_ten_by_1024_about_40mb():
    # recsys.md: "a 10 x 1024 MLP ~ 40 MB" (fp32)
    spec = make_spec(model={"preset": "custom", "mlp": [1024] * 10, "dense_features": 1024,
                            "tables": [{"name": "a", "rows": 10}], "embedding_dim": 1})
    mb = dense_shape(spec.model).layers["top_mlp"] * 4 / 1e6
    assert 38 < mb < 46


def test_dlrm_dense_params_from_config():
    spec = make_spec(model={"preset": "dlrm"})
    shape = dense_shape(spec.model)
    bottom = 13 * 512 + 512 + 512 * 256 + 256 + 256 * 128 + 128
    assert shape.layers["bottom_mlp"] == bottom
    n = 27
    assert shape.layers["top_mlp_input"] == n * (n - 1) // 2 + 128


def test_dcnv2_low_rank_cross_params():
    spec = make_spec(model={"preset": "dcnv2"})
    x0 = 26 * 128 + 128
    assert dense_shape(spec.model).layers["cross"] == 3 * (2 * x0 * 512 + x0)


def test_din_attention_params():
    spec = make_spec(model={"preset": "din", "tables": [{"name": "item", "rows": 1e6, "pooling_factor": 50}]})
    shape = dense_shape(spec.model)
    att_in = 4 * spec.model.embedding_dim
    assert shape.layers["attention_mlp"] == att_in * 80 + 80 + 80 * 40 + 40 + 40 + 1


def test_fused_optimizer_keeps_no_embedding_gradient():
    spec = make_spec(model={"sharding": "table_wise"}, job={"optimizer": "sgd"})
    m = plan_memory(spec, 80 * GIB, 8).memory
    assert m.parallelism == "model"
    dp = plan_memory(make_spec(job={"optimizer": "sgd"}), 80 * GIB, 8).memory
    assert dp.parallelism == "data"
    assert dp.gradient_bytes - m.gradient_bytes == dp.total_embedding_bytes


def test_mixed_precision_adds_a_copy():
    a = plan_memory(make_spec(job={"precision": "fp32"}), 80 * GIB, 8)
    b = plan_memory(make_spec(job={"precision": "bf16"}), 80 * GIB, 8)
    assert b.memory.dense_bytes - a.memory.dense_bytes == a.dense.params * 2


def test_reserve_includes_15_percent_of_hbm():
    m = plan_memory(make_spec(), 80 * GIB, 8).memory
    assert m.reserve_bytes >= 0.15 * 80 * GIB


@pytest.mark.parametrize("rows,expect", [(50e6, "data"), (100e6, "model")])
def test_sharding_threshold_half_of_one_gpu(rows, expect):
    # 64 x fp32 = 256 B/row: 50e6 rows = 11.9 GiB (< 40 GiB = 50% of 80), 100e6 x 2 tables... > 50%
    tables = [{"name": f"t{i}", "rows": rows} for i in range(2)]
    spec = make_spec(model={"tables": tables, "embedding_dim": 64 if expect == "data" else 128},
                     job={"optimizer": "sgd"})
    m = plan_memory(spec, 80 * GIB, 8).memory
    assert m.parallelism == expect
    if expect == "model":
        assert m.gpus_needed >= 2 and m.fits


def test_row_wise_for_table_larger_than_one_gpu():
    spec = make_spec(model={"tables": [{"name": "huge", "rows": 400e6}, {"name": "s", "rows": 1e3}],
                            "embedding_dim": 128}, job={"optimizer": "sgd"})
    m = plan_memory(spec, 80 * GIB, 16).memory
    assert m.sharding["huge"] == "row_wise" and m.sharding["s"] == "table_wise"
    assert m.fits and m.gpus_needed == 3   # 190.7 GiB over ~67 GiB budgets


def test_does_not_fit_returns_plan_with_warning():
    spec = make_spec(model={"tables": [{"name": "huge", "rows": 4e9}], "embedding_dim": 128})
    plan = make_plan(spec, bundled_catalog())
    assert plan.memory.fits is False
    assert plan.memory.gpus_needed > plan.world_size
    assert any("does not fit" in w and "GiB short" in w for w in plan.warnings)
