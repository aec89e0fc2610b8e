"""Issue 27: 1-, 2- and 4-GPU machines and the B200 generation. Every new row against its source
extract, the GPU and fabric facts, and planning across sizes on each cloud."""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reclaunch.catalog import bundled_catalog, offers
from reclaunch.catalog.build_catalog import aggregate, build_rows, read_facts
from reclaunch.providers.aws import catalog_rows as build_aws
from reclaunch.providers.azure import catalog_rows as build_azure
from reclaunch.providers.gcp import catalog_rows as build_gcp
from reclaunch.catalog.refresh import Fetch, Quote, refresh
from reclaunch.fabric import get_profile, profile_for
from reclaunch.planner import compare, make_plan
from reclaunch.ui.plan import recommendation_line as recommendation
from reclaunch.spec import load_spec
from tests.catalog.test_catalog_data import source_rows

ROOT = Path(__file__).resolve().parents[2]
AWS_SNAPSHOT = "skypilot-org/skypilot-catalog@00148f2a catalogs/v8/aws/vms.csv"
NEW = {
    "aws": {"g5.xlarge", "g6.xlarge", "g6.8xlarge", "g6e.2xlarge", "p6-b200.48xlarge", "p5.4xlarge"}
           | {f"g6.{s}xlarge" for s in (2, 4, 12, 16, 24, 48)}
           | {f"g6e.{s}xlarge" for s in ("", 4, 8, 16, 24)}
           | {f"g5.{s}xlarge" for s in (2, 4, 8, 16, 24)},
    "azure": {"Standard_NC24ads_A100_v4", "Standard_NC48ads_A100_v4", "Standard_NC40ads_H100_v5",
              "Standard_NC80adis_H100_v5"},
    "gcp": {f"{f}-{n}g" for f in ("a2-highgpu", "a2-ultragpu", "a3-highgpu") for n in (1, 2, 4)}
           | {"a4-highgpu-8g"} | {f"g2-standard-{n}" for n in (4, 8, 12, 16, 24, 32, 48)},
}

# Sizes under 8 GPUs that carry vpc.amazonaws.com/efa in the Karpenter instance table (EC2
# DescribeInstanceTypes). p5.4xlarge has one EFA device too but stays ethernet: see its row.
EFA_BELOW_8 = {"g5.8xlarge", "g5.16xlarge", "g5.24xlarge", "g6.8xlarge", "g6.12xlarge", "g6.16xlarge", "g6.24xlarge",
               "g6e.8xlarge", "g6e.16xlarge", "g6e.24xlarge"}


def _rows(cloud):
    return [o for o in bundled_catalog().offers if o.cloud == cloud and o.instance_type in NEW[cloud]]


def test_every_new_type_has_rows_with_its_fabric_and_size():
    facts = read_facts()
    for cloud, types in NEW.items():
        for it in types:
            assert (cloud, it) in facts, it
            rows = [o for o in _rows(cloud) if o.instance_type == it]
            assert rows, f"{cloud} {it}: no region"
            prof = profile_for(cloud, it, "auto", bundled_catalog())
            assert prof.fabric == rows[0].fabric and prof.warning is None, (it, prof.name)
            # no inter-node fabric unless the vendor documents one (EFA on G6/G6e 8xlarge and up)
            if rows[0].gpu_count < 8:
                want = "efa" if it in EFA_BELOW_8 else "ethernet"
                assert rows[0].fabric == want and not rows[0].gpudirect, it
    counts = {c: {o.gpu_count for o in bundled_catalog().offers if o.cloud == c} for c in NEW}
    assert all({1, 2, 4, 8} <= v for c, v in counts.items() if c != "aws"), counts
    assert {1, 4, 8} <= counts["aws"]


def test_aws_rows_are_the_snapshot_extract_aggregated():
    facts = read_facts()
    cells = aggregate(source_rows(build_aws.SOURCES), facts, "aws")
    rows, _ = build_rows(cells, facts, AWS_SNAPSHOT, dt.date(2026, 11, 9), "aws")
    got = {(r["instance_type"], r["region"]): r for r in rows}
    bundled = {(o.instance_type, o.region): o for o in _rows("aws")}
    assert set(got) == set(bundled)
    for k, r in got.items():
        o = bundled[k]
        assert o.on_demand_usd == float(r["on_demand_usd"]) and o.zones == r["zones"], k
        assert o.spot_usd == (float(r["spot_usd"]) if r["spot_usd"] else None), k
        assert o.price_as_of == dt.date(2026, 11, 9) and o.source == r["source"], k
    # the one-GPU dev box of the seed (one 24 GB card): g5.xlarge in us-east-1 at 1.006 USD/h
    assert bundled[("g5.xlarge", "us-east-1")].on_demand_usd == 1.006
    assert bundled[("p6-b200.48xlarge", "us-west-2")].on_demand_usd == 113.9328
    # 1 x H100 and the cheapest L40S, us-east-1 (vms.csv @00148f2a); p5.4xlarge has no AZ
    # with a spot price in the file, so no spot price
    p5 = bundled[("p5.4xlarge", "us-east-1")]
    assert (p5.on_demand_usd, p5.spot_usd, p5.gpu_count, p5.gpu) == (6.88, None, 1, "H100-80GB")
    assert bundled[("g6e.xlarge", "us-east-1")].on_demand_usd == 1.861
    assert bundled[("g6.48xlarge", "us-east-1")].on_demand_usd == 13.3504
    # g5.4xlarge's us-west-2 Local Zone row (usw2-lax1-az1) is not one of the region's AZs
    assert bundled[("g5.4xlarge", "us-west-2")].zones == "usw2-az1 usw2-az2 usw2-az3"


def test_no_aws_row_gets_a_profile_asking_for_more_efa_devices_than_it_has():
    """A pod that asks for more vpc.amazonaws.com/efa than the node has never schedules: the
    fabric profile of every AWS row must fit the row's documented device count (nics)."""
    cat = bundled_catalog()
    for o in {(o.instance_type): o for o in cat.offers if o.cloud == "aws"}.values():
        prof = profile_for("aws", o.instance_type, "auto", cat)
        assert prof.resources.get("vpc.amazonaws.com/efa", 0) <= (o.nics if o.fabric == "efa" else 0), \
            (o.instance_type, dict(prof.resources), o.nics)


def test_azure_rows_match_the_extract_columns():
    snap = [r for r in source_rows(build_azure.SOURCES) if r["InstanceType"] in NEW["azure"]]
    facts = read_facts()
    bundled = {(o.instance_type, o.region): o for o in _rows("azure")}
    assert {(r["InstanceType"], r["Region"]) for r in snap} == set(bundled)
    for r in snap:
        o = bundled[(r["InstanceType"], r["Region"])]
        f = facts[("azure", o.instance_type)]
        assert o.on_demand_usd == float(r["Price"]), o.key
        assert int(float(r["vCPUs"])) == int(f["vcpus"]) and float(r["MemoryGiB"]) == float(f["ram_gib"])
        assert int(r["AcceleratorCount"]) == o.gpu_count, o.key
    # NC H100 v5 spot is the on-demand price in the file: no discount, so no spot price
    assert all(o.spot_usd is None for o in _rows("azure") if "H100" in o.instance_type)
    assert build_azure.AS_OF == dt.date(2026, 11, 9)


def test_gcp_rows_are_priced_from_pricing_yml_or_flagged():
    prices = {(r["machine_type"], r["region"]): r for r in source_rows([build_gcp.PRICES])}
    avail = {(r["InstanceType"], r["Region"]) for r in source_rows(build_gcp.SOURCES)}
    facts = read_facts()
    for o in _rows("gcp"):
        assert (o.instance_type, o.region) in avail, o.key      # sold there per the snapshot
        p = prices.get((o.instance_type, o.region))
        if p is None:
            assert not o.priced and "availability only" in o.source, o.key
            continue
        assert o.price_as_of == dt.date(2026, 7, 30), o.key
        assert o.spot_usd == pytest.approx(float(p["hour_spot"]), abs=1e-4), o.key
        if facts[("gcp", o.instance_type)]["purchase"] == "on-demand":
            assert o.on_demand_usd == pytest.approx(float(p["hour"]), abs=1e-4), o.key
        else:      # Spot or Flex-start only: never an on-demand price
            assert o.on_demand_usd is None and o.purchase == "flex-start", o.key
    a4 = [o for o in _rows("gcp") if o.instance_type == "a4-highgpu-8g"]
    assert a4 and not any(o.priced for o in a4)


def test_gpu_facts_for_the_new_gpus():
    gpus = bundled_catalog().gpus
    b200, nvl = gpus["B200-180GB"], gpus["H100-NVL-94GB"]
    assert (b200.memory_gib, b200.hbm_tbps, b200.bf16_tflops, b200.tf32_tflops, b200.fp32_tflops) == \
        (180, 8.0, 2250, 1125, 75)
    assert b200.bf16_tflops == 2 * b200.tf32_tflops and "HGX B200" in b200.source
    assert (nvl.memory_gib, nvl.hbm_tbps, nvl.bf16_tflops) == (94, 3.9, 835.5)
    for name in ("H200-141GB", "L40S-48GB", "B200-180GB", "A10G-24GB", "L4-24GB"):
        g = gpus[name]
        assert g.fp32_tflops < g.tf32_tflops < g.bf16_tflops == g.fp16_tflops and g.hbm_tbps > 0, name


def test_b200_fabric_profiles_cite_vendor_settings():
    p6 = profile_for("aws", "p6-b200.48xlarge", "auto", bundled_catalog())
    assert p6.name == "efa-p6" and p6.resources == {"vpc.amazonaws.com/efa": 8}
    assert p6.env["NCCL_NET"] == "AWS Libfabric" and "aws-ofi-nccl" in p6.source
    assert p6.intra_node_busbw_gbs > get_profile("efa-p5").members[0].intra_node_busbw_gbs
    a4 = profile_for("gcp", "a4-highgpu-8g", "auto", bundled_catalog())
    assert a4.name == "gcp-rdma-a4" and a4.env["NCCL_NET"] == "gIB"
    assert a4.env == get_profile("gcp-rdma").env and "cluster-toolkit" in a4.source
    assert not any("NCCL_ALGO" in p.env for p in (p6, a4))


def _spec(tmp_path, cloud, region, gpu, **extra):
    body = {"name": "small-deepfm", "cloud": cloud, "region": region, "gpu": gpu,
            "storage": {"kind": "none"}, "spot": {"enabled": False},
            "job": {"image": "ghcr.io/acme/recsys-train:1.4", "command": ["python", "train.py"],
                    "batch_size": 4096, "precision": "bf16", "optimizer": "adam",
                    "dataset": {"samples": 4.2e9, "epochs": 1}},
            "model": {"preset": "deepfm", "embedding_dim": 16,
                      "tables": [{"name": "user_id", "rows": 1e6}, {"name": "item_id", "rows": 2e6}]},
            **extra}
    p = tmp_path / f"{cloud}.yaml"
    p.write_text(json.dumps(body))
    return p


@pytest.mark.parametrize("cloud,region,gpu,want", [
    ("aws", "us-east-1", "A10G", "g5.xlarge"),
    ("gcp", "us-central1", "L4", "g2-standard-4"),
    ("azure", "eastus", "A100-80GB", "Standard_NC24ads_A100_v4"),
])
def test_one_gpu_deepfm_plans_a_priced_one_gpu_machine(tmp_path, cloud, region, gpu, want):
    cat = bundled_catalog()
    spec = load_spec(_spec(tmp_path, cloud, region, gpu), cat)
    plan = make_plan(spec, cat)
    assert (plan.instance_type, plan.nodes, plan.gpus_per_node) == (want, 1, 1)
    assert plan.cost.on_demand_total_usd is not None and plan.cost.on_demand_total_usd > 0
    assert plan.memory.fits and len(set(plan.picked_from)) > 1
    assert "cheapest whole job" in plan.pick_reason and "price:" in plan.pick_reason
    assert "memory: the model needs 1 GPU(s)" in plan.pick_reason
    # the same spec with gpus_per_node: 8 keeps the 8-GPU node (the user's choice)
    eight = load_spec(_spec(tmp_path, cloud, region, gpu, gpus_per_node=8), cat)
    assert make_plan(eight, cat).gpus_per_node == 8


def test_compare_ranks_small_machines_and_says_why(tmp_path):
    cat = bundled_catalog()
    spec = load_spec(_spec(tmp_path, "aws", "us-east-1", "A10G"), cat)
    rows = compare(spec, cat, same_cloud=True, regions=["us-east-1"])
    best = next(r for r in rows if r.recommended)
    assert best.plan.gpus_per_node == 1 and best.nodes == 1
    eights = [r for r in rows if r.plan.gpus_per_node == 8 and r.usd is not None and r.plan.memory.fits]
    assert eights and all(r.usd > best.usd for r in eights)
    text = recommendation(rows)
    assert "next:" in text and "price:" in text and "scaling:" in text and "memory:" in text


def test_two_nodes_of_a_four_gpu_type_validate(tmp_path):
    cat = bundled_catalog()
    for cloud, region, gpu, it in (("aws", "us-east-1", "L40S", "g6e.12xlarge"),
                                   ("gcp", "us-central1", "A100-80GB", "a2-ultragpu-4g"),
                                   ("gcp", "us-central1", "L4", "g2-standard-48")):
        spec = load_spec(_spec(tmp_path, cloud, region, gpu, nodes=2, gpus_per_node=4), cat)
        plan = make_plan(spec, cat)
        assert plan.gpus_per_node == 4 and plan.nodes == 2, plan.instance_type
        load_spec(_spec(tmp_path, cloud, region, gpu, nodes=2, gpus_per_node=4, instance_type=it), cat)


def test_a_gpu_count_no_instance_has_is_one_validate_line(tmp_path):
    f = _spec(tmp_path, "azure", "eastus", "H100-NVL-94GB", gpus_per_node=4)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "reclaunch", "validate", str(f)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "have 1 or 2 GPUs, not 4" in proc.stderr


def test_catalog_gpu_b200_lists_the_b200_rows():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-m", "reclaunch", "catalog", "--gpu", "B200", "--json"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert {r["instance_type"] for r in rows} == {"p6-b200.48xlarge", "a4-highgpu-8g"}
    assert {r["region"] for r in rows if r["cloud"] == "aws"} == {"us-east-1", "us-east-2", "us-west-2"}
    assert all(r["gpu"] == "B200-180GB" for r in rows)


def test_refresh_reprices_every_row_and_keeps_flex_start_off_on_demand(tmp_path):
    """`catalog refresh` over the whole catalog with a fetcher that answers every row: each new
    row is re-priced, and a row not sold on demand never takes the fetched on-demand figure."""
    cat = bundled_catalog()

    def answer(rows):
        return Fetch(quotes={o.key: Quote(on_demand_usd=1.0, spot_usd=0.5, source="stub") for o in rows})

    rep = refresh(cat, clouds=["aws", "azure", "gcp"], dry_run=True, today=dt.date(2026, 12, 1),
                  overlay_dir=tmp_path, fetchers={c: answer for c in ("aws", "azure", "gcp")})
    assert not rep.failures and len(rep.diffs) == len(cat.offers)
    new = {d.key: d.new for d in rep.diffs}
    flex = [k for k, o in new.items() if o.purchase == "flex-start"]
    assert flex and all(new[k].on_demand_usd is None and new[k].spot_usd == 0.5 for k in flex)
    assert new[("gcp", "a4-highgpu-8g", "us-central1")].on_demand_usd == 1.0   # flagged row priced
    assert offers(cat, gpu="B200-180GB")
