import json
import subprocess
import sys
from pathlib import Path

import pytest

from reclaunch.catalog import bundled_catalog
from reclaunch.planner import compare, make_plan
from reclaunch.ui.plan import render_compare, render_plan
from reclaunch.planner.model import Plan
from reclaunch.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))

CONTRACT = {
    "": ["cloud", "region", "instance_type", "nodes", "gpus_per_node", "gpu", "gpu_memory_gib",
         "memory", "comm", "throughput_samples_per_second", "duration_hours", "cost",
         "nccl_env", "warnings"],
    "memory": ["embedding_bytes", "dense_bytes", "gradient_bytes", "optimizer_bytes",
               "activation_bytes", "total_bytes_per_gpu", "fits", "parallelism"],
    "comm": ["allreduce_seconds_per_step", "bandwidth_gbps_used"],
    "cost": ["on_demand_usd_per_hour", "spot_usd_per_hour", "on_demand_total_usd",
             "spot_total_usd", "price_as_of"],
}


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_plans_and_renders(path):
    plan = make_plan(load_spec(path), bundled_catalog())
    assert isinstance(plan, Plan)
    assert plan.throughput_samples_per_second > 0 and plan.duration_hours > 0
    data = json.loads(json.dumps(plan.to_json()))
    for section, keys in CONTRACT.items():
        obj = data[section] if section else data
        missing = [k for k in keys if k not in obj]
        assert not missing, (section, missing)
    assert data["memory"]["parallelism"] in ("data", "model")
    assert data["constants"]["sources"]
    assert "plan:" in render_plan(plan)


def test_compare_ranks_at_least_15_offers_for_dcnv2():
    spec = load_spec(ROOT / "examples/gcp-dcnv2-a3mega.yaml")
    rows = compare(spec, bundled_catalog())
    priced = [r for r in rows if r.usd is not None]
    assert len({(r.plan.instance_type, r.plan.region) for r in priced}) >= 15
    assert [r.p90_usd for r in priced] == sorted(r.p90_usd for r in priced)
    assert all(r.usd is None for r in rows[len(priced):])     # unpriced last
    assert sum(r.recommended for r in rows) == 1
    text = render_compare(rows, top=None)
    assert "no price" in text and text.startswith("recommendation:")
    top = render_compare(rows)   # --top 10 by default, the recommendation first
    # the top 10, and the recommendation's own row when cheaper alternatives push it out
    best = next(r for r in rows if r.recommended)
    assert top.startswith("recommendation:") and f"{10 + (best.rank > 10)} of {len(rows)} offers shown" in top
    # fewer, bigger GPUs win: scaling is poor, so the cheapest row uses fewer nodes than asked.
    assert rows[0].plan.world_size < spec.nodes * spec.gpus_per_node


def test_same_cloud_only():
    spec = load_spec(ROOT / "examples/gcp-dcnv2-a3mega.yaml")
    assert {r.plan.cloud for r in compare(spec, bundled_catalog(), same_cloud=True)} == {"gcp"}


def test_import_is_light():
    code = ("import sys, reclaunch.planner; "
            "bad=[m for m in ('rich','torch','boto3','pulumi','kubernetes') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
