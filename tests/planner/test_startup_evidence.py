"""Startup timeline, measured runs and the host calibration: what the plan learns from outside
the model. Pure: records and calibrations are injected (PlanContext), never this machine's."""

from __future__ import annotations

import dataclasses

import pytest

from planner_helpers import make_spec
from reclaunch import clouds
from reclaunch.catalog import bundled_catalog
from reclaunch.planner import make_plan
from reclaunch.planner import measured as meas
from reclaunch.planner import startup as stmod
from reclaunch.planner.calibration import HostCalibration, Point, fit, reference_spec


def local_doc(batch=256, **over):
    doc = {"name": "loc", "cloud": "local", "nodes": 2, "gpus_per_node": 1,
           "storage": {"kind": "none"},
           "job": {"command": ["python", "train.py"], "batch_size": batch, "precision": "fp32",
                   "optimizer": "adam", "dataset": {"samples": 153600}},
           "model": {"preset": "deepfm", "embedding_dim": 16, "mlp": [64, 32],
                     "tables": [{"name": "u", "rows": 100000}, {"name": "i", "rows": 50000},
                                {"name": "c", "rows": 1000}]}}
    doc.update(over)
    return doc


# ------------------------------------------------------------------ startup

def test_aws_timeline_steps_billing_and_json_contract():
    p = make_plan(make_spec(nodes=2, storage={"kind": "fsx-lustre", "size": "1.2TiB"}), bundled_catalog())
    st = p.startup
    data = stmod.startup_data()
    names = [s.name for s in st.steps]
    assert names[0] == "EKS control plane" and not st.steps[0].billed       # no GPU exists yet
    assert all(s.billed for s in st.steps[1:])                              # GPU nodes bill from boot
    boot = stmod.target_steps("aws")["steps"][1]
    assert st.steps[1].seconds == boot["seconds"] + boot["per_node"] * 1    # 2 nodes
    pull = next(s for s in st.steps if s.name.startswith("image pull"))
    assert pull.seconds == pytest.approx(10e9 / (data["image"]["pull_mb_per_s"] * 1e6))
    assert st.seconds == pytest.approx(sum(s.seconds for s in st.steps))
    assert st.billed_seconds == pytest.approx(st.seconds - st.steps[0].seconds)
    j = p.to_json()["startup"]
    assert set(j) >= {"seconds", "billed_seconds", "steps"}
    assert all(set(s) == {"name", "seconds", "billed", "source"} and s["source"] for s in j["steps"])
    assert p.duration_hours * 3600 == pytest.approx(1e9 / p.throughput_samples_per_second + st.seconds)


def test_image_size_and_file_system_and_preflight_move_the_timeline():
    base = make_spec(job={"image_size": "2GB"})
    big = make_spec(job={"image_size": "30GB"})
    t_small, t_big = stmod.timeline(base), stmod.timeline(big)
    assert t_big.seconds - t_small.seconds == pytest.approx(28e9 / (stmod.startup_data()["image"]["pull_mb_per_s"] * 1e6))
    assert "job.image_size" in t_big.steps[-1].name
    # Azure Managed Lustre takes longer than AKS's own creation: the nodes wait for it (billed)
    az = make_spec(cloud="azure", region="eastus", instance_type="Standard_ND96amsr_A100_v4",
                   storage={"kind": "azure-lustre", "size": "8TiB"})
    t = stmod.timeline(az)
    fs = next(s for s in t.steps if s.name.startswith("file system"))
    before = sum(s.seconds for s in t.steps[:t.steps.index(fs)])
    assert fs.seconds == pytest.approx(clouds.storage_kind("azure-lustre").created_in[0] - before)
    assert fs.billed
    with_pf = stmod.timeline(base, preflight=True)
    assert with_pf.steps[-1].name == "NCCL preflight" and with_pf.seconds > t_small.seconds


def test_targets_are_looked_up_by_key_not_by_name(monkeypatch):
    toy = {"steps": [{"name": "toy control plane", "seconds": 7, "billed": False, "source": "test"}]}
    real = stmod.target_steps
    monkeypatch.setattr(stmod, "target_steps", lambda t: toy if t == "toycloud" else real(t))
    t = stmod.timeline(make_spec(), "toycloud")
    assert t.steps[0].name == "toy control plane" and t.steps[0].seconds == 7
    assert stmod.timeline(make_spec(), "nowhere").notes


def test_local_startup_is_unbilled_and_uses_the_measured_first_step():
    spec = reference_spec(local_doc())
    p = make_plan(spec, bundled_catalog())
    assert p.startup.billed_seconds == 0 and p.cost.on_demand_total_usd == 0
    assert not any("image" in s.name for s in p.startup.steps)
    t = stmod.timeline(spec, measured_first_step_s=4.5, measured_at="2026-12-01")
    assert [s.seconds for s in t.steps] == [4.5] and "calibrate" in t.steps[0].source


# ------------------------------------------------------------------ measured runs

def record_for(plan, samples_per_s, when="2026-11-30T10:00:00+00:00", **over):
    key = meas.key_for(plan.spec, cloud=plan.cloud, instance=plan.instance_type,
                       gpus_per_node=plan.gpus_per_node, nodes=plan.nodes,
                       sharding=meas.sharding_of(plan.sharding))
    return meas.from_dict({**key, "samples_per_s": samples_per_s, "measured_at": when,
                           "run": "t", "steps": 500, "intervals": 9,
                           "step": {"step_s": 0.01, "comm_s": None}, **over})


def test_a_matching_record_prices_the_job_at_the_measured_rate():
    cat = bundled_catalog()
    spec = make_spec(nodes=2)
    model = make_plan(spec, cat)
    old = record_for(model, 1.9e6, "2026-11-01T00:00:00+00:00")
    new = record_for(model, 2.1e6)
    p = make_plan(spec, cat, context=meas.PlanContext(measurements=(old, new)))
    assert p.throughput_samples_per_second == pytest.approx(2.0e6)      # the clean runs' median
    assert p.throughput_model_samples_per_second == pytest.approx(model.throughput_samples_per_second)
    b = p.to_json()["throughput_basis"]
    assert b["kind"] == "measured" and b["measured_at"] == new.measured_at and "run t" in b["source"]
    assert b["runs"] == b["clean_runs"] == 2
    train_h = 1e9 / 2.0e6 / 3600
    assert p.duration_hours == pytest.approx(train_h + p.startup.seconds / 3600)
    assert p.cost.on_demand_total_usd == pytest.approx(
        p.cost.on_demand_usd_per_hour * (train_h + p.startup.billed_seconds / 3600)
        + p.cost.control_plane_usd + p.cost.storage_usd)
    # A measured rate is not the model's guess: its range is the run-to-run band, far narrower.
    lo, hi = p.throughput_range
    mlo, mhi = model.throughput_range
    assert lo < 2.0e6 < hi and (hi / lo) < (mhi / mlo) / 1.5


@pytest.mark.parametrize("change", [{"batch_size": 8192}, {"nodes": 3}, {"precision": "fp16"},
                                    {"model_signature": "sha256:0000000000000000"},
                                    {"sharding": {"user_id": "data_parallel"}}])
def test_a_record_of_another_shape_does_not_apply(change):
    cat = bundled_catalog()
    spec = make_spec(nodes=2)
    model = make_plan(spec, cat)
    rec = record_for(model, 2.0e6, **change)
    p = make_plan(spec, cat, context=meas.PlanContext(measurements=(rec,)))
    assert p.throughput_basis["kind"] == "model"
    assert p.throughput_samples_per_second == pytest.approx(model.throughput_samples_per_second)


def test_model_signature_follows_the_model_not_the_name_or_dataset():
    a = make_spec(name="a", job={"dataset": {"samples": 1e6}})
    b = make_spec(name="b", job={"dataset": {"samples": 5e9}})
    c = make_spec(model={"mlp": [512, 256]})
    assert meas.model_signature(a) == meas.model_signature(b) != meas.model_signature(c)


@pytest.mark.parametrize("bad, field", [
    ({"samples_per_s": -1.0}, "samples_per_s"), ({"samples_per_s": "fast"}, "samples_per_s"),
    ({"nodes": True}, "nodes"), ({"precision": "fp8"}, "precision"), ({"extra": 1}, "extra"),
    ({"measured_at": "yesterday"}, "measured_at"), ({"sharding": {"t": "diagonal"}}, "sharding.t"),
    ({"step": {"step_s": -2}}, "step.step_s"), ({"run": "x\n$(rm -rf /)"}, "run"),
    ({"model_signature": "md5:1"}, "model_signature")])
def test_records_are_validated_strictly(bad, field):
    plan = make_plan(make_spec(), bundled_catalog())
    good = record_for(plan, 1e6).to_dict()
    with pytest.raises(meas.RecordError) as e:
        meas.from_dict({**good, **bad})
    assert str(e.value).startswith(field)
    missing = dict(good)
    del missing["cloud"]
    with pytest.raises(meas.RecordError, match="^cloud: missing"):
        meas.from_dict(missing)


# ------------------------------------------------------------------ host calibration

def calibration(a: float, b: float, batches=(128, 1024)) -> HostCalibration:
    """A calibration whose measured steps are exactly a + b x the model's steps."""
    cat = bundled_catalog()
    pts = []
    for bs in batches:
        doc = local_doc(bs, name=f"ref-{bs}")
        m = make_plan(reference_spec(doc), cat).step.total_seconds
        pts.append(Point(spec_doc=doc, step_s=a + b * m))
    return HostCalibration(host_id="h1", identity={"cpu_model": "Test CPU", "cores": 4, "torch": "x"},
                           measured_at="2026-12-01T08:00:00+00:00", points=tuple(pts), first_step_s=6.0)


def test_the_host_fit_recovers_its_constants_and_reproduces_its_points():
    cat = bundled_catalog()
    cal = calibration(0.040, 1.5)
    f = fit(cal, lambda s: make_plan(s, cat).step.total_seconds)
    assert (f.a, f.b, f.how) == (pytest.approx(0.040), pytest.approx(1.5), "line")
    ctx = meas.PlanContext(host=cal, host_id="h1")
    ref = reference_spec(cal.points[0].spec_doc)
    p = make_plan(ref, cat, context=ctx)
    assert p.step.total_seconds == pytest.approx(cal.points[0].step_s)
    # an unmeasured shape (batch 256) sits on the same line
    spec = reference_spec(local_doc(256))
    m = make_plan(spec, cat).step.total_seconds
    q = make_plan(spec, cat, context=ctx)
    assert q.step.total_seconds == pytest.approx(0.040 + 1.5 * m)
    assert q.throughput_samples_per_second == pytest.approx(2 * 256 / (0.040 + 1.5 * m))
    assert "calibrated on this host 2026-12-01" in q.throughput_basis["source"]
    assert q.startup.seconds == 6.0
    assert not any("uncalibrated" in w for w in q.warnings)


def test_a_slower_host_predicts_slower_and_one_point_is_a_ratio():
    cat = bundled_catalog()
    spec = reference_spec(local_doc(256))
    fast = make_plan(spec, cat, context=meas.PlanContext(host=calibration(0.01, 1.0)))
    slow = make_plan(spec, cat, context=meas.PlanContext(host=calibration(0.05, 3.0)))
    assert slow.throughput_samples_per_second < fast.throughput_samples_per_second
    one = calibration(0.0, 2.0, batches=(512,))
    f = fit(one, lambda s: make_plan(s, cat).step.total_seconds)
    assert f.how == "ratio" and f.a == 0 and f.b == pytest.approx(2.0)


def test_without_a_calibration_the_local_plan_says_how_to_get_one():
    p = make_plan(reference_spec(local_doc()), bundled_catalog(),
                  context=meas.PlanContext(host_note="uncalibrated (the host changed since 2026-11-01: cores)"))
    assert any("host changed" in w and "reclaunch calibrate" in w for w in p.warnings)
    b = p.throughput_basis
    assert b["kind"] == "model" and "host changed" in b["source"] and b["measured_at"] is None


def test_noisy_points_fall_back_to_the_better_of_offset_and_ratio():
    """A loaded machine measured the small batch slower than the large one: no line with
    a >= 0 and b > 0 exists; the fixed cost (b = 1) explains the points better than a ratio."""
    cat = bundled_catalog()
    cal = calibration(0.0, 1.0)
    xs = [make_plan(reference_spec(p.spec_doc), cat).step.total_seconds for p in cal.points]
    noisy = dataclasses.replace(cal, points=(
        dataclasses.replace(cal.points[0], step_s=xs[1] + 0.050),     # slower than the big batch
        dataclasses.replace(cal.points[1], step_s=xs[1] + 0.040)))
    f = fit(noisy, lambda s: make_plan(s, cat).step.total_seconds)
    assert f.how == "offset" and f.b == 1.0
    assert f.a == pytest.approx((xs[1] - xs[0] + 0.050 + 0.040) / 2)
    ratio = sum(p.step_s for p in noisy.points) / sum(xs)
    worse = max(abs(p.step_s / (ratio * x) - 1) for p, x in zip(noisy.points, xs))
    assert max(abs(r) for r in f.residuals) < worse


def test_a_spot_plan_with_fallback_says_when_the_autoscaler_tries_on_demand():
    note = "after 10 min without a Ready node"
    spot = make_plan(make_spec(spot={"enabled": True, "fallback": "on-demand"}), bundled_catalog())
    assert any(note in n for n in spot.startup.notes)
    for spec in (make_spec(spot={"enabled": True, "fallback": "none"}),
                 make_spec(spot={"enabled": False})):
        assert not any(note in n for n in make_plan(spec, bundled_catalog()).startup.notes)
