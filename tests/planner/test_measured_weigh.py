"""Measured runs are weighed by their conditions (issue 38): a run with reclaims, an unsteady
rate or a loaded host does not replace the model alone; clean runs price the plan at their
median, and the plan says how many runs it stands on and how far apart they were."""

from __future__ import annotations

import pytest
from planner_helpers import make_spec

from reclaunch.catalog import bundled_catalog
from reclaunch.planner import make_plan
from reclaunch.planner import measured as meas
from reclaunch.ui.plan import render_plan

CAT = bundled_catalog()


def _record(plan, rate: float, run: str, when: str, **cond) -> meas.Measurement:
    key = meas.key_for(plan.spec, cloud=plan.cloud, instance=plan.instance_type,
                       gpus_per_node=plan.gpus_per_node, nodes=plan.nodes,
                       sharding=meas.sharding_of(plan.sharding))
    return meas.from_dict({**key, "samples_per_s": rate, "measured_at": when, "run": run,
                           "steps": 500, "intervals": 9, "step": {}, **cond})


@pytest.fixture(scope="module")
def base():
    return make_plan(make_spec(), CAT)


def test_a_run_with_reclaims_does_not_replace_the_model(base):
    model = base.throughput_samples_per_second
    drill = _record(base, model * 0.34, "drill", "2026-12-01T10:00:00+00:00", reclaims=1)
    p = make_plan(make_spec(), CAT, context=meas.PlanContext(measurements=(drill,)))
    b = p.throughput_basis
    assert b["kind"] == "model" and p.throughput_samples_per_second == pytest.approx(model)
    assert b["measured_runs"]["runs"] == 1 and "reclaim" in b["measured_runs"]["excluded"][0]
    assert p.throughput_range[0] <= drill.samples_per_s          # the run widens the range
    assert any("not clean" in c for c in p.range_covers)
    assert any("none clean" in w for w in p.warnings)
    assert "measured run(s) not clean" in render_plan(p, width=200)


def test_unsteady_and_loaded_runs_are_left_out(base):
    m = base.throughput_samples_per_second
    runs = (_record(base, m * 0.5, "wobbly", "2026-12-01T10:00:00+00:00", rate_spread=2.4),
            _record(base, m * 0.5, "busy", "2026-12-01T11:00:00+00:00", load_per_core=3.0))
    w = meas.weigh(list(runs))
    assert w.samples_per_s is None and len(w.excluded) == 2
    assert "unsteady" in w.excluded[0] and "loaded" in w.excluded[1]


def test_clean_runs_price_at_their_median_and_show_their_spread(base):
    m = base.throughput_samples_per_second
    recs = (_record(base, m * 0.40, "a", "2026-12-01T10:00:00+00:00", reclaims=0, rate_spread=1.05),
            _record(base, m * 0.50, "b", "2026-12-01T11:00:00+00:00", reclaims=0, rate_spread=1.1),
            _record(base, m * 0.45, "c", "2026-12-01T12:00:00+00:00", reclaims=0),
            _record(base, m * 0.10, "d", "2026-12-01T13:00:00+00:00", reclaims=2))
    p = make_plan(make_spec(), CAT, context=meas.PlanContext(measurements=recs))
    b = p.throughput_basis
    assert b["kind"] == "measured" and b["runs"] == 4 and b["clean_runs"] == 3
    assert p.throughput_samples_per_second == pytest.approx(m * 0.45)
    lo, hi = b["spread"]
    assert lo == pytest.approx(0.40 / 0.45) and hi == pytest.approx(0.50 / 0.45)
    # the range is at least as wide as the clean runs' own spread
    assert p.throughput_range[0] <= m * 0.40 * 1.0001 and p.throughput_range[1] >= m * 0.50 * 0.9999
    assert "3 clean run(s) of 4" in render_plan(p, width=200)


def test_old_records_without_conditions_still_read():
    rec = meas.from_dict({"cloud": "aws", "instance": "p4de.24xlarge", "gpus_per_node": 8, "nodes": 1,
                          "model_signature": "sha256:0123456789abcdef", "batch_size": 1,
                          "precision": "bf16", "sharding": {}, "samples_per_s": 1.0,
                          "measured_at": "2026-11-30T10:00:00+00:00", "run": "old"})
    assert rec.reclaims is None and rec.rate_spread == 0.0 and meas.why_not_clean(rec) is None
    with pytest.raises(meas.RecordError, match="reclaims"):
        meas.from_dict({**rec.to_dict(), "reclaims": -1})
