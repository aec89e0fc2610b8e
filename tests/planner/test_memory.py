import pytest

from planner_helpers import make_spec
from reclaunch.catalog import bundled_catalog
from reclaunch.planner import make_plan
from reclaunch.planner.memory import GIB, MIB, dense_shape, fixed_part, optimizer_state_bytes, table_bytes


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


def _plan(spec, nodes=1):
    return make_plan(spec, bundled_catalog(), nodes=nodes)


def test_fused_optimizer_keeps_no_embedding_gradient():
    # make_spec: 1 x p4de.24xlarge = 8 x A100-80GB
    m = _plan(make_spec(model={"sharding": "table_wise"}, job={"optimizer": "sgd"})).memory
    assert m.parallelism == "model"
    dp = _plan(make_spec(model={"sharding": "data"}, job={"optimizer": "sgd"})).memory
    assert dp.parallelism == "data"
    assert dp.gradient_bytes - m.gradient_bytes == dp.total_embedding_bytes


def test_mixed_precision_adds_a_copy():
    a = fixed_part(make_spec(job={"precision": "fp32"}), 80 * GIB)
    b = fixed_part(make_spec(job={"precision": "bf16"}), 80 * GIB)
    assert b.dense_w - a.dense_w == a.dense.params * 2


def test_reserve_includes_15_percent_of_hbm():
    m = _plan(make_spec()).memory
    assert m.reserve_bytes >= 0.15 * 80 * GIB


def test_half_of_one_gpu_rule_is_only_an_explanation():
    # 2 x 50e6 x 64 fp32 = 23.8 GiB < 50% of 80 GiB: the seed's rule says data parallel, but
    # all-reducing 23.8 GiB of table gradients every step is slower than sharding them.
    tables = [{"name": f"t{i}", "rows": 50e6} for i in range(2)]
    p = _plan(make_spec(model={"tables": tables}, job={"optimizer": "sgd"}))
    assert p.memory.parallelism == "model" and p.memory.fits
    assert any("says data parallel" in line and "only a rule" in line
               for line in p.sharding.explanation)
    assert p.sharding.alternatives["data_parallel"] > p.step.total_seconds


def test_table_larger_than_one_gpu_is_split():
    spec = make_spec(model={"tables": [{"name": "huge", "rows": 400e6}, {"name": "s", "rows": 1e3}],
                            "embedding_dim": 128}, job={"optimizer": "sgd"})
    p = _plan(spec, nodes=2)
    t = {x.name: x for x in p.sharding.tables}
    assert t["huge"].sharding_type in ("row_wise", "table_row_wise", "column_wise")
    assert len(t["huge"].ranks) > 1
    m = p.memory
    assert m.fits and m.gpus_needed == 3   # 190.7 GiB over ~67 GiB budgets


def test_does_not_fit_returns_plan_with_warning():
    spec = make_spec(model={"tables": [{"name": "huge", "rows": 4e9}], "embedding_dim": 128})
    plan = make_plan(spec, bundled_catalog())
    assert plan.memory.fits is False
    assert plan.memory.gpus_needed > plan.world_size
    assert any("does not fit" in w and "GiB short" in w for w in plan.warnings)
