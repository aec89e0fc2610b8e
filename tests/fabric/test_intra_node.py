"""Every catalog row's intra-node bandwidth follows from what the row says its GPUs are joined
by (reclaunch/fabric/intra.py), never from the instance's name: a 2- or 4-GPU slice of an
NVSwitch board gets the board's measured figure, an NVLink bridge its own, PCIe the floor
(issue 38: a3-highgpu-2g/4g and Standard_NC80adis_H100_v5 were planned at PCIe bandwidth).
`interconnect.intra_node` means something: it picks instances and is refused where false."""

from __future__ import annotations

import pytest

from reclaunch.catalog import bundled_catalog
from reclaunch.fabric import profile_for
from reclaunch.fabric.intra import NVLINK, PCIE, of_offer
from reclaunch.fabric.profiles import HGX_A100, HGX_H100, PCIE_GEN4

CAT = bundled_catalog()
ROWS = sorted({(o.cloud, o.instance_type): o for o in CAT.offers}.values(),
              key=lambda o: (o.cloud, o.instance_type))


@pytest.mark.parametrize("offer", ROWS, ids=[f"{o.cloud}-{o.instance_type}" for o in ROWS])
def test_every_row_gets_the_figure_of_its_link(offer):
    fact = of_offer(offer)
    assert fact is not None, f"{offer.instance_type}: {offer.nvlink} {offer.nvlink_gbs_per_gpu} GB/s has no figure"
    prof = profile_for(offer.cloud, offer.instance_type, "auto", CAT)
    assert prof.intra_node_busbw_gbs == fact.busbw_gbs
    if offer.intra_node == "nvlink":
        assert fact is NVLINK[(offer.nvlink, offer.nvlink_gbs_per_gpu)]
        assert fact.busbw_gbs > 10 * PCIE_GEN4, offer.instance_type
    else:
        assert offer.intra_node == "pcie" and fact is PCIE


@pytest.mark.parametrize("itype,want", [
    ("a3-highgpu-2g", HGX_H100), ("a3-highgpu-4g", HGX_H100), ("a3-highgpu-8g", HGX_H100),
    ("a2-highgpu-2g", HGX_A100), ("a2-ultragpu-4g", HGX_A100),
    ("Standard_NC80adis_H100_v5", 116.0),            # NVLink bridge, nccl-tests issue 194
    ("Standard_NC96ads_A100_v4", PCIE_GEN4), ("g6e.12xlarge", PCIE_GEN4)])
def test_the_rows_the_issue_named(itype, want):
    o = next(x for x in CAT.offers if x.instance_type == itype)
    assert profile_for(o.cloud, itype, "auto", CAT).intra_node_busbw_gbs == pytest.approx(want)


def _spec(**over):
    from reclaunch.spec import Spec

    data = {"name": "t", "cloud": "gcp", "region": "us-central1", "nodes": 1, "gpus_per_node": 4,
            "instance_type": "a3-highgpu-4g",
            "job": {"image": "x", "command": ["x"], "batch_size": 8192, "dataset": {"samples": 1e9}},
            "model": {"preset": "dlrm"}}
    data.update(over)
    return Spec.model_validate(data)


def test_a_four_gpu_h100_plan_runs_its_collectives_on_nvlink():
    from reclaunch.planner import make_plan

    plan = make_plan(_spec(), CAT)
    assert plan.comm.intra_node_gbps == pytest.approx(HGX_H100)


def test_intra_node_is_checked_against_the_instance():
    from reclaunch.spec.rules import cross_check

    assert not cross_check(_spec(interconnect={"intra_node": "nvlink"}), CAT)
    bad = cross_check(_spec(interconnect={"intra_node": "pcie"}), CAT)
    assert bad and bad[0][0] == ("interconnect", "intra_node") and "NVLink4" in bad[0][1]
    pcie = _spec(cloud="aws", region="us-east-1", instance_type="g6e.12xlarge",
                 interconnect={"intra_node": "nvlink"})
    assert "no NVLink" in cross_check(pcie, CAT)[0][1]


def test_intra_node_picks_the_instances_that_have_it():
    from reclaunch.errors import SpecError
    from reclaunch.planner import make_plan

    base = dict(cloud="azure", region="eastus", instance_type=None, gpu="A100-80GB")
    nvl = make_plan(_spec(**base, gpus_per_node=8, interconnect={"intra_node": "nvlink"}), CAT)
    assert nvl.offer.intra_node == "nvlink"
    # 4 x A100-80GB on Azure is PCIe only (NC96ads_A100_v4): asking for NVLink finds none
    with pytest.raises(SpecError, match="intra_node nvlink"):
        make_plan(_spec(**base, gpus_per_node=4, interconnect={"intra_node": "nvlink"}), CAT)
