"""Issue 37 section 1: the model of a node (catalog/node.py) against nodes real kubelets reported.

catalog/data/node_figures.csv holds measured capacity (the kernel's MemTotal) and, where the
node ran the reservation rules we model, allocatable (memory, cpu, huge pages), each row with
its source and what it stands for (itself, or the families it is a proxy for). The model
must stay at or below every row (a check that errs says "may not fit", never "fits" for a
node that cannot hold the pod), and the vendors' reservation formulas must reproduce the
measured allocatable from the measured capacity.
"""

from __future__ import annotations

import csv
from fractions import Fraction
from pathlib import Path

import pytest

from reclaunch import clouds
from reclaunch.catalog import load_catalog
from reclaunch.catalog.node import GIB, MIB, boot_hugepages, node_model
from reclaunch.catalog.sources import source_path
from tests.needs import need_input

FIGURES = Path(__file__).resolve().parents[2] / "reclaunch" / "catalog" / "data" / "node_figures.csv"


def figures() -> list[dict[str, str]]:
    with FIGURES.open() as fh:
        return list(csv.DictReader(line for line in fh if not line.startswith("#")))


def _id(row: dict[str, str]) -> str:
    return f"{row['cloud']}-{row['instance_type']}-{row['node']}"


def _int(row: dict[str, str], col: str) -> int | None:
    return int(row[col]) if row[col] else None


def _fabric(row: dict[str, str]) -> str | None:
    """The fabric of what the row stands for: its own instance type, or the first catalogued
    family it is a proxy for (the node image of that family is the one modelled)."""
    cat = load_catalog()
    if row["stands_for"] == "itself":
        offer = cat.instance(row["cloud"], row["instance_type"])
    else:
        first = row["stands_for"].split()[0]
        offer = next((o for o in cat.offers if o.cloud == row["cloud"]
                      and o.instance_type.startswith(first)), None)
    return offer.fabric if offer is not None else None


def _hugepages(row: dict[str, str]) -> dict[str, int]:
    """What our stacks give such a node: the boot-time pages of its fabric (clouds' facts)."""
    fab = _fabric(row)
    return boot_hugepages(clouds.fabric(fab).boot_hugepages, int(row["vcpus"])) if fab else {}


def _node(row: dict[str, str]):
    return node_model(row["cloud"], row["instance_type"], int(row["vcpus"]),
                      float(row["nominal_gib"]), _hugepages(row))


def _reserved(row: dict[str, str], capacity: Fraction) -> Fraction:
    """kube-reserved and eviction memory by the node's own rules (its max pods where it says)."""
    facts = clouds.get(row["cloud"]).allocatable
    node = node_model(row["cloud"], row["instance_type"], int(row["vcpus"]),
                      float(row["nominal_gib"]))
    if "per_pod_mib" in facts:
        pods = _int(row, "max_pods") or node.max_pods
        mem = Fraction(facts["base_mib"] + facts["per_pod_mib"] * pods) * MIB
        if "memory_cap_fraction" in facts:
            mem = min(mem, capacity * Fraction(facts["memory_cap_fraction"]))
    else:
        mem = node.reserved_memory
    return mem + node.eviction_memory


def _capacity(row: dict[str, str]) -> int:
    """The measured capacity, or (a vendor that printed only Allocatable) the capacity that
    node's own reservation rules and huge pages imply: allocatable + reserved + pages."""
    if row["capacity_bytes"]:
        return int(row["capacity_bytes"])
    alloc = Fraction(int(row["allocatable_bytes"]))
    implied = alloc + _reserved(row, alloc) + (_int(row, "hugepages_bytes") or 0)
    return int(implied)


def test_every_figure_is_sourced_and_plausible():
    rows = figures()
    assert {r["cloud"] for r in rows} == {"aws", "azure", "gcp"}
    catalog = load_catalog()
    for r in rows:
        assert r["source"].strip(), _id(r)
        assert r["capacity_bytes"] or r["allocatable_bytes"], _id(r)
        cap = _capacity(r)
        # a kubelet never reports more than the instance is sold with, nor less than 90% of it
        assert 0.9 * float(r["nominal_gib"]) * GIB < cap < float(r["nominal_gib"]) * GIB, _id(r)
        if r["allocatable_bytes"]:
            assert int(r["allocatable_bytes"]) + (_int(r, "hugepages_bytes") or 0) < cap, _id(r)
        # a proxy says so: "itself" only for a type we launch (a catalogued GPU instance or a
        # system-pool shape), otherwise the catalogued families it stands for
        if r["stands_for"] == "itself":
            assert (catalog.instance(r["cloud"], r["instance_type"]) is not None
                    or r["instance_type"] in clouds.get(r["cloud"]).system_shapes), _id(r)
        else:
            for family in r["stands_for"].split():
                assert any(o.cloud == r["cloud"] and o.instance_type.startswith(family)
                           for o in catalog.offers), (_id(r), family)


def test_published_gpu_nodes_are_in_the_figures():
    """Issue 37 review: the published EKS EFA nodes (p4de, p5, p3dn) with their huge pages."""
    rows = {(r["instance_type"], r["node"]) for r in figures() if r["hugepages_bytes"]}
    assert {it for it, _ in rows} >= {"p4de.24xlarge", "p5.48xlarge", "p3dn.24xlarge"}


@pytest.mark.parametrize("row", figures(), ids=_id)
def test_modelled_capacity_is_at_most_the_measured(row):
    node = _node(row)
    assert node.capacity_memory <= _capacity(row), (
        f"{_id(row)}: modelled {float(node.capacity_memory) / GIB:.2f} GiB, the kubelet reported "
        f"{_capacity(row) / GIB:.2f} GiB")


@pytest.mark.parametrize("row", [r for r in figures() if r["allocatable_bytes"]], ids=_id)
def test_modelled_allocatable_is_at_most_the_measured(row):
    """Memory with the huge pages our stack gives such a node (EFA: the boot-time pages), and
    cpu where the row says: the pod's memory limit is this figure, so it must not exceed it."""
    alloc = _node(row).allocatable()
    assert alloc["memory"] <= int(row["allocatable_bytes"]), (
        f"{_id(row)}: modelled {float(alloc['memory']) / GIB:.2f} GiB, the kubelet reported "
        f"{int(row['allocatable_bytes']) / GIB:.2f} GiB")
    if row["allocatable_millicores"]:
        assert alloc["cpu"] * 1000 <= int(row["allocatable_millicores"]), _id(row)


@pytest.mark.parametrize("row", [r for r in figures() if r["hugepages_bytes"]], ids=_id)
def test_boot_hugepages_are_what_the_nodes_held(row):
    """Every published EFA node held 110 x vCPUs + 1 pages of 2 MiB (the fabric's facts); the
    AKS and GKE GPU nodes held none, and their fabrics reserve none."""
    assert sum(_hugepages(row).values()) == int(row["hugepages_bytes"]), _id(row)


@pytest.mark.parametrize("row", [r for r in figures() if r["allocatable_bytes"]
                                 and r["capacity_bytes"]], ids=_id)
def test_the_reservation_formulas_reproduce_the_measured_allocatable(row):
    """From the node's own capacity (not our modelled one), the cloud's kube-reserved and
    eviction rules give what that kubelet reported: the formulas, not only the overall margin,
    are what real nodes run. EKS's and AKS's to the MiB; GKE's tiers to within 0.1% of the
    capacity (GKE reserves a little differently from its published tiers, in a way we do not
    see: 79 MiB either way on the n2 nodes, 87 MiB more on the V100 node)."""
    facts = clouds.get(row["cloud"]).allocatable
    measured_cap = Fraction(int(row["capacity_bytes"]))
    # the nominal size that makes the model's capacity equal the measured one
    over = facts["capacity_overhead"]
    nominal = (measured_cap + over["fixed_mib"] * MIB) / (1 - Fraction(over["fraction"]))
    node = node_model(row["cloud"], row["instance_type"], int(row["vcpus"]),
                      float(nominal / GIB), {"hugepages-2Mi": _int(row, "hugepages_bytes") or 0})
    assert abs(node.capacity_memory - measured_cap) < MIB
    if row["max_pods"]:   # that node's own max pods (ours may differ for its type)
        alloc = (node.capacity_memory - _reserved(row, node.capacity_memory)
                 - (_int(row, "hugepages_bytes") or 0))
    else:
        alloc = node.allocatable()["memory"]
    assert abs(alloc - int(row["allocatable_bytes"])) <= max(MIB, measured_cap / 1000), (
        f"{_id(row)}: formula {float(alloc) / MIB:.0f} MiB, measured "
        f"{int(row['allocatable_bytes']) / MIB:.0f} MiB")


@pytest.mark.parametrize("instance,pods", [("p4d.24xlarge", 737), ("p5.48xlarge", 100),
                                           ("p5en.48xlarge", 198), ("g5.48xlarge", 345),
                                           ("g6e.48xlarge", 492), ("g5.xlarge", 58)])
def test_eks_gpu_nodes_get_nodeadms_eni_max_pods(instance, pods):
    """Our GPU nodes are self-managed AL2023 nodes: nodeadm's ENI formula, not the managed
    node groups' 250, sets max pods and with it kube-reserved memory (11 x pods + 255 MiB)."""
    offer = load_catalog().instance("aws", instance)
    node = node_model("aws", instance, offer.vcpus, offer.ram_gib)
    assert node.max_pods == pods
    assert node.reserved_memory == (11 * pods + 255) * MIB
    assert node.eviction_memory == 100 * MIB


def test_every_catalogued_gpu_node_is_modelled_below_its_nominal_size():
    for o in {(o.cloud, o.instance_type): o for o in load_catalog().offers}.values():
        node = node_model(o.cloud, o.instance_type, o.vcpus, o.ram_gib)
        alloc = node.allocatable()
        assert 0 < alloc["memory"] < node.capacity_memory < o.ram_gib * GIB, o.instance_type
        assert 0 < alloc["cpu"] < o.vcpus, o.instance_type


def test_hugepages_come_off_allocatable_memory():
    plain = node_model("aws", "p5.48xlarge", 192, 2048)
    huge = node_model("aws", "p5.48xlarge", 192, 2048, {"hugepages-2Mi": 5 * GIB})
    assert plain.allocatable()["memory"] - huge.allocatable()["memory"] == 5 * GIB
    assert huge.allocatable()["hugepages-2Mi"] == 5 * GIB


def test_daemonsets_come_off_what_pods_may_request():
    node = node_model("gcp", "a3-megagpu-8g", 208, 1872)
    pods = node.for_pods({"cpu": Fraction(1, 2), "memory": Fraction(GIB)})
    assert node.allocatable()["cpu"] - pods["cpu"] == Fraction(1, 2)
    assert node.allocatable()["memory"] - pods["memory"] == GIB


def test_a_target_without_measured_figures_gets_karpenters_default_overhead():
    """The toy cloud declares no capacity_overhead: Karpenter's VM_MEMORY_OVERHEAD_PERCENT."""
    from reclaunch.catalog.node import DEFAULT_CAPACITY_OVERHEAD

    assert DEFAULT_CAPACITY_OVERHEAD == {"fixed_mib": 0, "fraction": Fraction(75, 1000)}
    for f in clouds.all_facts():
        if f.kind == "kube":
            assert "capacity_overhead" in (f.allocatable or {}), f.name


def test_gcp_machine_memory_is_gib():
    """Compute Engine's "GB" of machine memory are GiB (memoryMb / 1024): a3-megagpu-8g has
    1872 GiB, not 1872e9 bytes (1743 GiB). GKE nodes report more than the decimal reading
    allows (n2-highmem-64: 503.9 GiB of capacity against "512 GB" = 476.8 GiB)."""
    n2 = next(r for r in figures() if r["instance_type"] == "n2-highmem-64")
    assert int(n2["capacity_bytes"]) > 512e9
    catalog = load_catalog()
    assert catalog.instance("gcp", "a3-megagpu-8g").ram_gib == 1872
    path = need_input(source_path("skypilot_v8_gcp_006059e0.csv"), "SkyPilot GCP catalog extract")
    with path.open() as fh:
        sky = {r["InstanceType"]: float(r["MemoryGiB"]) for r in csv.DictReader(fh)}
    for it, gib in sky.items():
        offer = catalog.instance("gcp", it)
        if offer is not None:
            assert offer.ram_gib == gib, it
