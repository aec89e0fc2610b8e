"""Every catalog row's inter-node bandwidth follows from a fact about that instance: its fabric
profile's figure, capped by the row's own network (`network_gbps`, halved without GPUDirect
RDMA: fabric/inter.py). Planner review defect 3: a 1-GPU g6.2xlarge (5 Gbps) was planned at
plain TCP's 4 GB/s, eight times what its NIC carries, so its all-to-all looked ~6x too fast."""

from __future__ import annotations

import pytest

from reclaunch.catalog import bundled_catalog
from reclaunch.fabric import get_profile, profile_for
from reclaunch.fabric.inter import NIC_EFFICIENCY, nic_cap_gbs, of_offer

CAT = bundled_catalog()
ROWS = sorted({(o.cloud, o.instance_type): o for o in CAT.offers}.values(),
              key=lambda o: (o.cloud, o.instance_type))


@pytest.mark.parametrize("offer", ROWS, ids=[f"{o.cloud}-{o.instance_type}" for o in ROWS])
def test_every_row_gets_at_most_what_its_network_carries(offer):
    prof = profile_for(offer.cloud, offer.instance_type, "auto", CAT)
    cap = nic_cap_gbs(offer)
    assert offer.network_gbps > 0 and cap == offer.network_gbps / 8 * NIC_EFFICIENCY[offer.gpudirect]
    family = get_profile(prof.name)
    member = next((m for m in family.members if offer.instance_type.lower().startswith(m.prefix.lower())
                   and m.inter_node_busbw_gbs is not None), None)
    figure = member.inter_node_busbw_gbs if member is not None else family.inter_node_busbw_gbs
    assert prof.inter_node_busbw_gbs == pytest.approx(min(figure, cap)), offer.instance_type
    assert prof.inter_node_busbw_gbs <= cap + 1e-9


@pytest.mark.parametrize("itype,want", [
    ("g6.2xlarge", 5 / 8 * 0.5),       # 5 Gbps, TCP: the NIC, not plain TCP's 4 GB/s
    ("g5.xlarge", 10 / 8 * 0.5),
    ("a2-highgpu-1g", 24 / 8 * 0.5),   # 24 Gbps: 1.5 GB/s under the ethernet profile's 4
    ("a2-highgpu-8g", 4.0),            # 100 Gbps: the profile's plain-TCP figure is lower
    ("p4d.24xlarge", 50.0), ("p5.48xlarge", 400.0), ("Standard_ND96amsr_A100_v4", 187.2)])
def test_the_nic_caps_small_instances_only(itype, want):
    o = next(x for x in CAT.offers if x.instance_type == itype)
    assert profile_for(o.cloud, itype, "auto", CAT).inter_node_busbw_gbs == pytest.approx(want)


def test_a_plan_uses_the_capped_figure():
    from reclaunch.planner import make_plan
    from reclaunch.spec import Spec

    spec = Spec.model_validate({
        "name": "t", "cloud": "aws", "region": "eu-south-2", "nodes": 6, "gpus_per_node": 1,
        "instance_type": "g6.2xlarge",
        "job": {"image": "x", "command": ["x"], "batch_size": 8192, "dataset": {"samples": 1e9}},
        "model": {"preset": "dlrm"}})
    plan = make_plan(spec, CAT)
    assert plan.comm.inter_node_gbps == pytest.approx(0.3125)


def test_without_a_network_figure_the_profile_stands():
    class Row:
        network_gbps = 0
        gpudirect = False
    got = of_offer(4.0, Row())
    assert got.busbw_gbs == 4.0 and not got.nic_bound


def test_several_nodes_off_the_superpod_fabric_warn():
    # planner review defect 5: the fit split cannot identify a separate cross-node efficiency
    # (planner/fit.py), so a multi-node plan on any cloud fabric says what was seen instead
    from reclaunch.planner import make_plan
    from reclaunch.planner.published import predict, rows
    from reclaunch.spec import Spec

    def spec(nodes):
        return Spec.model_validate({
            "name": "t", "cloud": "aws", "region": "us-east-1", "nodes": nodes, "gpus_per_node": 8,
            "instance_type": "p5.48xlarge", "model": {"preset": "dlrm"},
            "job": {"image": "x", "command": ["x"], "batch_size": 8192, "dataset": {"samples": 1e9}}})
    assert any("off NVIDIA's DGX SuperPOD" in w for w in make_plan(spec(2), CAT).warnings)
    assert not any("SuperPOD" in w for w in make_plan(spec(1), CAT).warnings)
    eos = next(r for r in rows() if r.id == "mlperf40-nvidia-8x8-h100")
    assert not any("SuperPOD" in w for w in predict(eos, CAT)[0].warnings)
