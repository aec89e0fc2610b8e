"""A measured run prices the job everywhere the plan is shown: `plan --compare` (its row),
`render` (the plan ConfigMap's plan.json) and `preview` (the plan the stack is built from),
as `plan` itself does (throughput_basis)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from reclaunch.catalog import bundled_catalog
from reclaunch.planner import compare, make_plan
from reclaunch.planner import measured as meas
from reclaunch.runtime import measurements as ms
from reclaunch.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]
AWS = str(ROOT / "examples" / "aws-deepfm-p4d.yaml")


def record_for(plan, samples_per_s: float) -> meas.Measurement:
    key = meas.key_for(plan.spec, cloud=plan.cloud, instance=plan.instance_type,
                       gpus_per_node=plan.gpus_per_node, nodes=plan.nodes,
                       sharding=meas.sharding_of(plan.sharding))
    return meas.from_dict({**key, "samples_per_s": samples_per_s, "measured_at": "2026-11-30T10:00:00+00:00",
                           "run": "earlier", "steps": 500, "intervals": 9, "step": {}})


def measured_rate(plan) -> float:
    # far from the model's figure so that a row priced by the model cannot pass for measured
    return plan.throughput_model_samples_per_second * 0.37


def test_compare_prices_the_measured_row_at_the_measured_rate():
    cat = bundled_catalog()
    spec = load_spec(AWS, cat)
    base = make_plan(spec, cat)
    rec = record_for(base, measured_rate(base))
    rows = compare(spec, cat, context=meas.PlanContext(measurements=(rec,)))
    # the key has no region: the same machines train as fast in every region
    hit = [r for r in rows if (r.plan.instance_type, r.nodes) == (base.instance_type, base.nodes)]
    assert hit, "the spec's own offer is a compare row"
    for r in hit:
        assert r.plan.throughput_samples_per_second == pytest.approx(rec.samples_per_s)
        assert r.to_json()["throughput_basis"]["kind"] == "measured"
    alone = {(r.plan.instance_type, r.plan.region, r.nodes): r for r in compare(spec, cat)}
    for r in hit:   # slower measured rate -> more hours -> more dollars than the model said
        m = alone[(r.plan.instance_type, r.plan.region, r.nodes)]
        assert r.plan.duration_hours > m.plan.duration_hours
        assert r.plan.cost.on_demand_total_usd > m.plan.cost.on_demand_total_usd
    others = [r for r in rows if r not in hit]
    assert others and all(r.to_json()["throughput_basis"]["kind"] == "model" for r in others)


def _saved_record() -> float:
    cat = bundled_catalog()
    base = make_plan(load_spec(AWS, cat), cat)
    rec = record_for(base, measured_rate(base))
    ms.save(rec)
    return rec.samples_per_s


def test_plan_compare_json_rows_carry_the_measured_basis():
    from reclaunch.cli import cli

    rate = _saved_record()
    res = CliRunner().invoke(cli, ["plan", AWS, "--compare", "--same-cloud", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["throughput_basis"]["kind"] == "measured"
    measured = [r for r in d["compare"] if r["throughput_basis"]["kind"] == "measured"]
    assert measured and all(r["throughput_samples_per_second"] == pytest.approx(rate) for r in measured)


def test_render_plan_json_is_priced_at_the_measured_rate():
    from reclaunch.cli import cli

    rate = _saved_record()
    res = CliRunner().invoke(cli, ["render", AWS])
    assert res.exit_code == 0, res.output
    cms = [o for o in yaml.safe_load_all(res.stdout) if o and o.get("kind") == "ConfigMap"
           and "plan.json" in (o.get("data") or {})]
    assert cms, "render writes the plan ConfigMap"
    plan = json.loads(cms[0]["data"]["plan.json"])
    assert plan["throughput_basis"]["kind"] == "measured"
    assert plan["throughput_samples_per_second"] == pytest.approx(rate)


def test_preview_builds_the_stack_from_the_measured_plan(monkeypatch):
    from reclaunch import providers
    from reclaunch.cli import cli

    rate = _saved_record()
    seen = []

    def fake_preview(plan):   # the Pulumi program under mocks is tested in tests/stacks
        seen.append(plan)
        return []

    monkeypatch.setattr(providers, "preview_plan", fake_preview)
    CliRunner().invoke(cli, ["preview", AWS, "--json"])
    assert seen and seen[0].throughput_basis["kind"] == "measured"
    assert seen[0].throughput_samples_per_second == pytest.approx(rate)
