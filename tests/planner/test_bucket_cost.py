"""Checkpoints in a bucket: priced (storage + requests) and timed, from dated data (bucket_cost.py)."""
from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import pytest

from reclaunch import clouds
from reclaunch.planner import make_plan
from reclaunch.planner.bucket_cost import checkpoint_bytes, checkpoint_cost, data
from reclaunch.spec import load_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_every_target_with_its_own_store_has_dated_sourced_prices():
    """Each target that declares object stores prices them in its facts (a cluster you bring
    declares none: it reaches any store and bills nothing of its own)."""
    dt.date.fromisoformat(data()["gathered"])
    with_stores = [f for f in clouds.all_facts() if f.object_stores]
    assert with_stores
    for f in with_stores:
        p = f.planner["bucket_prices"]
        dt.date.fromisoformat(p["as_of"])
        assert p["source"] and p["storage_usd_per_gb_month"] >= 0 and p["write_usd_per_1000"] >= 0


def test_the_plan_prices_and_times_the_bucket():
    spec = load_spec(EXAMPLES / "aws-spot-bucket.yaml")
    plan = make_plan(spec)
    ck = plan.constants["checkpoint_bucket"]
    assert ck["bytes"] == checkpoint_bytes(spec) > 10e9        # DLRM tables + Adam/SGD state
    rate = data()["write_gb_per_s_per_node"]
    assert ck["write_seconds"] == pytest.approx(ck["bytes"] / 1e9 / (rate * plan.nodes), abs=0.1)
    assert ck["storage_usd"] > 0 and ck["requests_usd"] > 0
    # The bucket is the job's only storage: its cost is the storage line item.
    assert plan.cost.storage_usd == pytest.approx(ck["storage_usd"] + ck["requests_usd"], rel=0.05)


def test_more_checkpoints_cost_more_requests_and_fs_checkpoints_none():
    spec = load_spec(EXAMPLES / "aws-spot-bucket.yaml")
    often = spec.model_copy(update={"job": spec.job.model_copy(update={
        "checkpoint": spec.job.checkpoint.model_copy(update={"every_minutes": 1})})})
    a, b = checkpoint_cost(spec, "aws", 2, 16, 10.0), checkpoint_cost(often, "aws", 2, 16, 10.0)
    assert b.checkpoints == 600 and a.checkpoints == 40 and b.requests_usd > a.requests_usd * 10
    assert checkpoint_cost(spec, "local", 2, 16, 10.0).storage_usd == 0.0
    fs = load_spec(EXAMPLES / "aws-auto-h100.yaml")
    assert checkpoint_cost(fs, "aws", 2, 16, 10.0) is None
    assert "checkpoint_bucket" not in make_plan(fs).constants


def test_a_checkpoint_longer_than_the_spot_notice_is_a_warning():
    from reclaunch.planner.bucket_cost import notice_warning

    spec = load_spec(EXAMPLES / "aws-spot-bucket.yaml")
    ck = checkpoint_cost(spec, "aws", 2, 16, 1.0)
    assert notice_warning(spec, "aws", ck) is None                      # ~50 s < 120 s
    slow = dataclasses.replace(ck, write_seconds=300.0)
    assert "120 s spot notice" in notice_warning(spec, "aws", slow)
    assert notice_warning(spec.model_copy(update={"spot": spec.spot.model_copy(update={"enabled": False})}),
                          "aws", slow) is None


def test_the_synchronous_periodic_saves_lengthen_the_job():
    """Issue 39: the reference trainer's periodic saves block the step loop (TorchRec's state
    cannot be staged for dcp.async_save): every save's write time is training time lost."""
    from reclaunch.planner.bucket_cost import stall_hours

    spec = load_spec(EXAMPLES / "aws-spot-bucket.yaml")
    plan = make_plan(spec)
    samples = spec.job.dataset.samples * spec.job.dataset.epochs
    compute_h = samples / plan.throughput_samples_per_second / 3600.0
    ck = checkpoint_cost(spec, "aws", plan.nodes, plan.world_size, compute_h)
    stall = stall_hours(spec, "aws", plan.nodes, plan.world_size, compute_h)
    assert ck.checkpoints >= 1 and stall > 0 and stall == pytest.approx(ck.checkpoints * ck.write_seconds / 3600.0)
    assert plan.duration_hours == pytest.approx(compute_h + stall + plan.startup.seconds / 3600.0, rel=1e-6)
