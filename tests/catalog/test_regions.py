"""Every region the catalog sells in: validate knows them, compare ranks across them, plan names
a cheaper one for the same job."""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reclaunch.catalog import bundled_catalog
from reclaunch.planner import compare, make_plan
from reclaunch.planner.regions import cheaper_region, cheaper_region_line, region_costs
from reclaunch.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]
P4D = ROOT / "examples" / "aws-deepfm-p4d.yaml"
H100 = ROOT / "examples" / "aws-auto-h100.yaml"


def _variant(tmp_path: Path, src: Path, *subs: tuple[str, str]) -> Path:
    text = src.read_text()
    for old, new in subs:
        assert old in text, old
        text = text.replace(old, new, 1)
    p = tmp_path / src.name
    p.write_text(text)
    return p


def _cli(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "reclaunch", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_european_and_asian_regions_plan(tmp_path):
    cat = bundled_catalog()
    for region in ("eu-central-1", "ap-northeast-1"):     # Frankfurt, Tokyo sell p4d
        spec = load_spec(_variant(tmp_path, P4D, ("region: us-east-1", f"region: {region}"),
                                  ("zones: [us-east-1a]", f"zones: [{region}a]")), cat)
        plan = make_plan(spec, cat)
        assert plan.region == region and plan.cost.on_demand_usd_per_hour > 21.9576  # dearer than Virginia
        assert not plan.cost.stale


def test_unknown_region_is_one_validate_line_with_a_suggestion(tmp_path):
    f = _variant(tmp_path, P4D, ("region: us-east-1", "region: eu-central-2"))
    proc = _cli("validate", f)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"{f}:5: region:") and "did you mean eu-central-1?" in lines[0]
    assert "us-west-2" in lines[0]          # the cloud's regions are listed


def test_compare_ranks_regions_and_filters_them():
    cat = bundled_catalog()
    spec = load_spec(P4D, cat)
    rows = compare(spec, cat, same_cloud=True)
    p4d_regions = {r.plan.region for r in rows if r.plan.instance_type == "p4d.24xlarge"}
    assert {"us-east-1", "eu-central-1", "ap-northeast-1"} <= p4d_regions
    only = compare(spec, cat, regions=["eu-west-2", "us-east-2"])
    assert only and {r.plan.region for r in only} <= {"eu-west-2", "us-east-2"}
    priced = [r.p90_usd for r in only if r.usd is not None and r.plan.memory.fits]
    assert priced == sorted(priced)         # ranked on the P90 cost (planner review defect 4)


def test_plan_names_a_cheaper_region_for_the_same_job():
    cat = bundled_catalog()
    spec = load_spec(H100, cat)          # spot p5 in us-east-1; us-east-2's spot is lower
    plan = make_plan(spec, cat)
    alt = cheaper_region(spec, plan, cat)
    assert alt is not None and alt["region"] != plan.region
    assert alt["instance_type"] == plan.instance_type and alt["usd"] < alt["current_usd"]
    others = region_costs(spec, plan, cat)
    assert alt["usd"] == min(r["usd"] for r in others)
    assert "set `region: " + alt["region"] in cheaper_region_line(alt)


def test_no_cheaper_region_when_the_spec_is_already_cheapest(tmp_path):
    cat = bundled_catalog()
    # on-demand p4d: 21.9576 in us-east-1 is the floor (us-east-2/us-west-2 charge the same)
    spec = load_spec(_variant(tmp_path, P4D, ("  enabled: true", "  enabled: false")), cat)
    assert cheaper_region(spec, make_plan(spec, cat), cat) is None
    # with spot on, Canada's cheapest AZ beats Virginia's spot mean for the same job
    spot = load_spec(P4D, cat)
    assert cheaper_region(spot, make_plan(spot, cat), cat)["region"] == "ca-central-1"


def test_plan_cli_json_field_and_region_filters(tmp_path):
    proc = _cli("plan", H100, "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["cheaper_region"]["region"] != out["region"]
    proc = _cli("plan", H100, "--compare", "--regions", "us-east-2,eu-west-2", "--json")
    assert {r["region"] for r in json.loads(proc.stdout)["compare"]} <= {"us-east-2", "eu-west-2"}
    bad = _cli("plan", H100, "--compare", "--region", "eu-west-9")
    # eu-west-2 and eu-west-3 (G6) are equally close: either suggestion names a real region
    assert bad.returncode == 2 and re.search(r"did you mean eu-west-[23]\?", bad.stderr), bad.stderr
    assert _cli("plan", H100, "--region", "us-east-2").returncode == 2   # needs --compare


@pytest.mark.parametrize("gpu", ["H100", "A100"])
def test_catalog_gpu_lists_every_region_with_dates(gpu):
    proc = _cli("catalog", "--gpu", gpu, "--json")
    rows = json.loads(proc.stdout)
    aws = {r["region"] for r in rows if r["cloud"] == "aws"}
    assert len(aws) >= 5 and all(r["price_as_of"] for r in rows)
    table = _cli("catalog", "--gpu", gpu).stdout
    assert "eu-" in table and "2026-11-09" in table
