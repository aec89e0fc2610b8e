"""The plan's P10-P90 range (reclaunch/planner/uncertainty.py): in --json, in the budget check."""

import pytest

from planner_helpers import make_spec
from reclaunch.catalog import bundled_catalog
from reclaunch.planner import make_plan, over_budget, uncertainty
from reclaunch.planner.perf import dense_seconds, host_work


def test_json_carries_ranges_around_the_point():
    p = make_plan(make_spec(), bundled_catalog())
    j = p.to_json()
    lo, hi = j["throughput_range"]
    point = j["throughput_samples_per_second"]
    assert lo < point < hi
    for key in ("on_demand_total_usd", "spot_total_usd"):
        if j["cost"][key] is not None:
            a, b = j["cost"][f"{key}_range"]
            assert a < j["cost"][key] < b
    h0, h1 = j["duration_hours_range"]
    assert h0 < j["duration_hours"] < h1
    # the model's band at least; wider for what the plan does not know (here: the stack)
    q10, q90 = uncertainty.ratios()
    assert hi >= point / q10 * 0.9999 and lo <= point / q90 * 1.0001
    assert j["range_covers"][0].startswith("model error") and any("stack" in c for c in j["range_covers"])
    # hours and samples/s are the same spread seen from both sides, the startup at its own
    up_h = j["startup"]["seconds"] / 3600.0
    s10, s90 = uncertainty.constants_startup_spread(p.startup)
    train_h = j["duration_hours"] - up_h
    assert h1 == pytest.approx(up_h * s90 + train_h * point / lo)
    assert h0 == pytest.approx(up_h * s10 + train_h * point / hi)


def test_the_startup_is_spread_by_its_own_figures_not_the_step_time():
    # The startup is paid in full however fast the steps run: its spread is startup.yaml's,
    # so no end of the range sits below the startup's own P10.
    p = make_plan(make_spec(), bundled_catalog())
    j = p.to_json()
    up_h, billed_h = j["startup"]["seconds"] / 3600.0, j["startup"]["billed_seconds"] / 3600.0
    assert up_h > 0 and billed_h > 0
    s10, s90 = uncertainty.constants_startup_spread(p.startup)
    assert 0 < s10 < 1 < s90
    assert j["duration_hours_range"][0] > up_h * s10
    assert any(c.startswith("startup x") for c in j["range_covers"])
    c = j["cost"]
    assert c["on_demand_total_usd_range"][0] > c["on_demand_usd_per_hour"] * billed_h * s10
    if c["spot_total_usd"] is not None:
        assert c["spot_total_usd_range"][0] > c["spot_usd_per_hour"] * billed_h * s10


def test_a_stated_stack_on_a_measured_fabric_keeps_the_models_band():
    p = make_plan(make_spec(job={"stack": "torchrec"}), bundled_catalog())
    q10, q90 = uncertainty.ratios()
    point = p.throughput_samples_per_second
    assert p.throughput_range == pytest.approx([point / q90, point / q10])
    assert not any("interconnect" in c for c in p.range_covers)
    assert "the torchrec stack only" in p.range_covers      # no other stack folded in


def test_an_unmeasured_fabric_widens_the_range_by_its_exposed_comm():
    cat = bundled_catalog()
    # ND H100 v5's inter-node figure is derived from the link rate (fabric/profiles.py)
    p = make_plan(make_spec(cloud="azure", region="eastus", instance_type="Standard_ND96isr_H100_v5",
                            nodes=4, job={"stack": "torchrec"}), cat)
    q10, q90 = uncertainty.ratios()
    point = p.throughput_samples_per_second
    assert p.throughput_range[1] > point / q10 and p.throughput_range[0] < point / q90
    assert any("interconnect" in c for c in p.range_covers)


def test_budget_is_held_to_the_p90():
    cat = bundled_catalog()
    point = make_plan(make_spec(), cat)
    od = point.cost.on_demand_total_usd
    p90 = point.cost.on_demand_total_usd_range[1]
    between = make_plan(make_spec(budget={"max_usd": (od + p90) / 2}), cat)
    assert over_budget(between)
    assert any("(P90) exceeds budget.max_usd" in w for w in between.warnings)
    assert not over_budget(make_plan(make_spec(budget={"max_usd": p90 * 1.01}), cat))


def test_local_plan_has_no_gpu_range():
    from reclaunch.spec import Spec

    s = Spec.model_validate({"name": "l", "cloud": "local", "nodes": 1, "gpus_per_node": 1,
                             "job": {"image": "x", "command": ["x"], "dataset": {"samples": 1000}},
                             "model": {"preset": "deepfm", "tables": [{"name": "a", "rows": 100}]}})
    p = make_plan(s)
    assert p.throughput_range is None and p.to_json()["cost"]["on_demand_total_usd_range"] is None


def test_execution_and_gradient_dtype_change_the_step():
    cat = bundled_catalog()
    eager = make_plan(make_spec(job={"batch_size": 256}), cat)
    graph = make_plan(make_spec(job={"batch_size": 256, "execution": "cuda_graph"}), cat)
    assert graph.step.total_seconds < eager.step.total_seconds
    assert host_work(graph.spec, "cuda", 4).seconds(2) < host_work(eager.spec, "cuda", 4).seconds(2)
    fp32 = make_plan(make_spec(nodes=2), cat)
    half = make_plan(make_spec(nodes=2, job={"gradient_dtype": "bf16"}), cat)
    assert half.step.allreduce_seconds < fp32.step.allreduce_seconds


def test_gemm_efficiency_rises_with_batch():
    # Per-sample dense time falls as the batch grows (memory-bound small GEMMs).
    cat = bundled_catalog()
    per = []
    for b in (64, 1024, 65536):
        p = make_plan(make_spec(job={"batch_size": b}), cat)
        per.append(p.step.dense_compute_seconds / b)
    assert per[0] > per[1] > per[2]


def test_input_pipeline_caps_a_tiny_model():
    # 2 tables, 3-layer MLP at 64k per GPU: the GPUs outrun what the host's cores can feed.
    cat = bundled_catalog()
    p = make_plan(make_spec(job={"batch_size": 65536}, model={"mlp": [16]}), cat)
    from reclaunch.planner.perf import input_ceiling

    ceiling = input_ceiling(p.spec, _hw(p, cat), p.nodes)
    assert p.throughput_samples_per_second == pytest.approx(min(ceiling, p.throughput_samples_per_second))
    assert p.throughput_samples_per_second <= ceiling * 1.0001


def _hw(plan, cat):
    from reclaunch.planner.core import _hardware

    return _hardware(plan.spec, plan.offer, cat, [])[0]


def test_dense_seconds_splits_backward():
    p = make_plan(make_spec(), bundled_catalog())
    from reclaunch.planner.memory import dense_shape

    total, bwd = dense_seconds(p.spec, _hw(p, bundled_catalog()), dense_shape(p.spec.model))
    assert 0 < bwd < total
