import dataclasses
import datetime as dt

import pytest

from planner_helpers import make_spec
from reclaunch.catalog import bundled_catalog
from reclaunch.errors import SpecError
from reclaunch.planner import make_plan, over_budget
from reclaunch.planner.cost import poisson_quantile
from reclaunch.planner.perf import allreduce_seconds, dim_penalty, hierarchical_allreduce_seconds


def test_allreduce_formula_hand_computed():
    # 2(n-1)/n x bytes / busbw: 8 GPUs, 1 GB at 100 GB/s -> 1.75 * 1e9 / 1e11 = 17.5 ms
    assert allreduce_seconds(1e9, 8, 100.0) == pytest.approx(0.0175)
    assert allreduce_seconds(1e9, 1, 100.0) == 0.0
    h = hierarchical_allreduce_seconds(1e9, 8, 4, 200.0, 50.0)
    # + one collective latency: 20 us base + 10 us per node doubling (log2 4 = 2) = 40 us
    assert h == pytest.approx(1.75e9 / 200e9 + 1.5e9 / 50e9 + 40e-6)


def test_dim_penalties():
    assert dim_penalty(16) == 1.75 and dim_penalty(64) == 1.15 and dim_penalty(128) == 1.0


def test_cost_arithmetic_on_demand():
    cat = bundled_catalog()
    spec = make_spec(nodes=2, storage={"kind": "fsx-lustre", "size": "1TiB"})
    p = make_plan(spec, cat)
    o = p.offer
    h = p.duration_hours            # training + the startup timeline (control plane, boot, pull)
    up_h, billed_h = p.startup.seconds / 3600, p.startup.billed_seconds / 3600
    assert 0 < billed_h < up_h
    assert p.cost.on_demand_usd_per_hour == pytest.approx(o.on_demand_usd * 2)
    assert p.cost.control_plane_usd == pytest.approx(0.10 * h)
    # 1 TiB of FSx for Lustre is created (and billed) as 1.2 TiB: its smallest size.
    assert p.cost.storage_usd == pytest.approx(1200 * 0.145 * h / 730)
    # the instances bill training plus the billed part of the startup only
    assert p.cost.on_demand_total_usd == pytest.approx(
        o.on_demand_usd * 2 * (h - up_h + billed_h) + p.cost.control_plane_usd + p.cost.storage_usd)
    assert p.duration_hours == pytest.approx(1e9 / p.throughput_samples_per_second / 3600 + up_h)


def test_spot_adds_reclaims_and_p50_le_p90():
    cat = bundled_catalog()
    spec = make_spec(nodes=4, spot={"enabled": True, "reclaim_rate_per_node_hour": 0.05,
                                    "restart_minutes": 10},
                     job={"dataset": {"samples": 2e12}, "checkpoint": {"every_minutes": 20}})
    p = make_plan(spec, cat)
    c = p.cost
    billed_h = p.duration_hours - (p.startup.seconds - p.startup.billed_seconds) / 3600
    base = c.spot_usd_per_hour * billed_h + c.control_plane_usd + c.storage_usd
    assert c.expected_reclaims > 1
    assert c.spot_total_usd > base
    assert base <= c.spot_p50_usd <= c.spot_p90_usd
    loss_h = (10 + 20 / 2) / 60
    # One distribution (issue 26): reclaims over the expected wall-clock time of the training
    # (the startup before the first step is paid once, issue 21).
    train_h = p.duration_hours - p.startup.seconds / 3600
    lam = 0.05 * 4 * train_h / (1 - 0.05 * 4 * loss_h)
    assert c.expected_reclaims == pytest.approx(lam)
    assert c.spot_total_usd == pytest.approx(base + lam * loss_h * c.spot_usd_per_hour, rel=0.01)
    assert c.spot_p90_usd == pytest.approx(
        base + poisson_quantile(lam, 0.9) * loss_h * c.spot_usd_per_hour, rel=0.01)
    assert p.constants["reclaim_rate_source"] == "spec.spot.reclaim_rate_per_node_hour"


def test_poisson_quantile():
    assert poisson_quantile(0, 0.9) == 0
    assert poisson_quantile(1.0, 0.5) == 1       # P(0)=.37, P(<=1)=.74
    assert poisson_quantile(1.0, 0.9) == 2       # P(<=2)=.92
    assert poisson_quantile(2000, 0.9) > 2000


def test_spot_max_price_below_spot_warns_and_missing_spot_is_none():
    cat = bundled_catalog()
    p = make_plan(make_spec(spot={"enabled": True, "max_price": 1.0}), cat)
    assert any("max_price" in w for w in p.warnings)
    # ca-central-1 lists p5 in one AZ whose spot price is the on-demand price: no spot price.
    q = make_plan(make_spec(region="ca-central-1", instance_type="p5.48xlarge",
                            spot={"enabled": True}), cat)
    assert q.cost.spot_total_usd is None and q.cost.spot_p90_usd is None
    assert any("no spot price" in w for w in q.warnings)


def test_stale_price_warning_names_the_date():
    cat = bundled_catalog()
    old = dt.date(2020, 1, 2)
    cat = dataclasses.replace(
        cat, offers=tuple(dataclasses.replace(o, price_as_of=old) for o in cat.offers))
    p = make_plan(make_spec(), cat)
    assert p.cost.stale and any("2020-01-02" in w for w in p.warnings)


def test_unpriced_row_is_not_called_a_stale_price():
    """An availability-only row (GCP regions the snapshot lists without a dated price) dates its
    listing, not a price: the plan says "no price", never "prices are N days old"."""
    cat = bundled_catalog()
    p = make_plan(make_spec(cloud="gcp", region="europe-west4", zones=["europe-west4-b"],
                            instance_type="a4-highgpu-8g", gpus_per_node=8,   # B200: no dated price
                            interconnect={"inter_node": "rdma"}, storage={"kind": "filestore", "size": "1TiB"}), cat)
    assert p.cost.on_demand_total_usd is None and not p.cost.stale and p.cost.price_as_of is None
    assert any("no on-demand price" in w for w in p.warnings)
    assert not any("days old" in w for w in p.warnings)


def test_budget():
    cat = bundled_catalog()
    p = make_plan(make_spec(budget={"max_usd": 1}, job={"dataset": {"samples": 1e11}}), cat)
    assert over_budget(p) and any("budget.max_usd" in w for w in p.warnings)
    assert not over_budget(make_plan(make_spec(budget={"max_usd": 1e8}), cat))


def test_region_without_catalog_row_is_a_clear_error():
    spec = make_spec(instance_type=None, gpu="H100-80GB", region="eu-west-9")
    with pytest.raises(SpecError) as e:   # a spec problem: exit 2, like validate
        make_plan(spec, bundled_catalog())
    assert "us-east-1" in str(e.value) and "catalog refresh" in str(e.value)
    assert e.value.exit_code == 2


def test_picks_cheapest_fitting_offer():
    spec = make_spec(instance_type=None, gpu="A100-40GB", region=None)
    p = make_plan(spec, bundled_catalog())
    assert p.instance_type == "p4d.24xlarge" and p.memory.fits


def test_local_plan():
    spec = make_spec(cloud="local", region=None, instance_type=None, nodes=2, gpus_per_node=1,
                     job={"batch_size": 256, "precision": "fp32"})
    p = make_plan(spec, bundled_catalog())
    assert p.fabric == "local-gloo" and p.nccl_env == {} and p.gpu is None
    assert p.cost.on_demand_total_usd == 0 and p.throughput_samples_per_second > 0
    # no calibration passed in: the plan says its figure is not this host's, and how to fix it
    assert "uncalibrated" in p.constants["note"] and "reclaunch calibrate" in p.constants["note"]
    assert p.throughput_basis["kind"] == "model"


def test_scaling_is_poor_at_64_to_128_gpus():
    # recsys.md: 30-55% efficiency at 64-128 GPUs (vs linear from one GPU). At 128 GPUs the
    # per-rank model lets DCNv2's 100-lookup table (cat_20, table-row-wise on one node: 8
    # ranks gather 100 x 8192 x 128 rows each per step) bound the step; runs that scale past
    # it split that table across nodes (TorchRec grid sharding), which we do not plan yet,
    # so the 128-GPU floor is 0.2.
    from planner_published import spec_for
    cat = bundled_catalog()
    for itype in ("a3-megagpu-8g", "p5.48xlarge"):
        o = next(x for x in cat.offers if x.instance_type == itype)
        s = spec_for("dcnv2", {"precision": "bf16", "optimizer": "rowwise_adagrad"}, 8, 8192)
        # A captured step: the claim is about the fabric, not an eager host issuing the step
        # (under TorchRec's pipeline the host time bounds 1 and 64 GPUs alike).
        doc = s.model_dump(mode="json", exclude_unset=True)
        doc["job"].update(stack="cuda-graph")
        s = type(s).model_validate(doc)
        one = make_plan(s, cat, offer=dataclasses.replace(o, gpu_count=1), nodes=1)
        for nodes in (8, 16):
            p = make_plan(s, cat, offer=o, nodes=nodes)
            eff = p.throughput_samples_per_second / (nodes * 8 * one.throughput_samples_per_second)
            print(f"{itype} {nodes * 8} GPUs: efficiency {eff:.2f}")
            # Sub-linear, not collapsed; the measured multi-node figures (MLPerf DLRM-DCNv2 on
            # 64 and 128 H100s) are calibration rows (tests/planner/test_calibration.py).
            assert (0.30 if nodes == 8 else 0.20) <= eff <= 0.9, (itype, nodes, eff)


@pytest.mark.parametrize("rate,restart,every", [(0.5, 30, 60), (1.0, 60, 120), (0.9, 240, 10000)])
def test_spot_band_and_mean_come_from_one_distribution(rate, restart, every):
    # Issue 26: at a high reclaim rate the mean was $12,802 with a P90 of $8,625.
    spec = make_spec(nodes=8, spot={"enabled": True, "reclaim_rate_per_node_hour": rate,
                                    "restart_minutes": restart},
                     job={"dataset": {"samples": 2e11}, "checkpoint": {"every_minutes": every}})
    c = make_plan(spec, bundled_catalog()).cost
    assert c.spot_p50_usd <= c.spot_p90_usd
    assert c.spot_p50_usd <= c.spot_total_usd * 1.02 <= c.spot_p90_usd * 1.05, (
        c.spot_p50_usd, c.spot_total_usd, c.spot_p90_usd)
