"""Issue 37 section 1: every training pod fits the modelled real node, on every catalogued GPU
instance, alone (1 node) or with others (2 and 8 nodes); the pool and the pod agree on
hugepages (one fact); and render / up --dry-run run the check `up` refuses on.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from reclaunch.catalog.node import GIB
from reclaunch.manifests.apiserver import quantity
from reclaunch.manifests.job import REQUEST_SHARE, render
from reclaunch.manifests.nodes import job_node, pool_node
from reclaunch.manifests.placement import for_plan
from reclaunch.manifests.stackfacts import node_pools
from tests.render.test_launch_fit import catalog, combo_plan


def gpu_instances():
    """(cloud, instance, region, gpus, spot) of every GPU instance of the kube clouds."""
    seen: dict = {}
    for o in catalog().offers:
        if o.gpu_count and (o.cloud, o.instance_type) not in seen:
            seen[(o.cloud, o.instance_type)] = o
    return [pytest.param(c, it, o.region, o.gpu_count, o.purchase != "on-demand", id=it)
            for (c, it), o in sorted(seen.items())]


def training_container(plan):
    job = next(o for o in render(plan) if o["kind"] == "PyTorchJob")
    spec = next(iter(job["spec"]["pytorchReplicaSpecs"].values()))["template"]["spec"]
    return spec["containers"][0]


@pytest.mark.parametrize("nodes", [1, 2, 8])
@pytest.mark.parametrize("cloud,instance,region,gpus,spot", gpu_instances())
def test_the_training_pod_fits_the_modelled_node(cloud, instance, region, gpus, spot, nodes):
    # the combination specs of test_launch_fit: each cloud's file system, so a spot-only type
    # checkpoints where every node mounts
    plan = combo_plan(cloud, instance, region, gpus, spot, nodes=nodes)
    rows = for_plan(plan, catalog())
    assert [(r["pod"], r["reasons"]) for r in rows if not r["fits"]] == []
    assert {r["role"] for r in rows} >= {"training", "preflight"}
    res = training_container(plan)["resources"]
    node = job_node(plan)
    want_mem, limit_mem = quantity(res["requests"]["memory"]), quantity(res["limits"]["memory"])
    # the request leaves real headroom below what the modelled node leaves to pods; the limit
    # is at most that node, never the nominal RAM
    assert want_mem <= node["memory"] * REQUEST_SHARE < node["memory"]
    assert want_mem < limit_mem <= node["memory"] < plan.offer.ram_gib * GIB
    assert quantity(res["requests"]["cpu"]) <= node["cpu"] * REQUEST_SHARE
    # the DaemonSets keep their cores: cpu requested + DaemonSets <= allocatable
    for pool in node_pools(plan):
        if pool.role == "gpu":
            alloc = pool_node(plan, pool, catalog()).allocatable()
            assert node["cpu"] < alloc["cpu"] and node["memory"] < alloc["memory"]


def with_hugepages(monkeypatch):
    """Give every EFA profile a hugepage pool (as the EKS examples' hugepages-2Mi: 5120Mi)."""
    import reclaunch.fabric as fabric

    real = fabric.profile_for

    def profile_for(*args, **kwargs):
        prof = real(*args, **kwargs)
        if prof.fabric == "efa":
            prof = prof._replace(hugepages={"hugepages-2Mi": "5120Mi"})
        return prof
    monkeypatch.setattr(fabric, "profile_for", profile_for)


@pytest.mark.parametrize("nodes", [1, 2])
@pytest.mark.parametrize("instance", ["p4d.24xlarge", "p5.48xlarge", "p5en.48xlarge"])
def test_pods_and_pools_take_hugepages_from_one_fact(monkeypatch, instance, nodes):
    """The pool's pages are one figure (NodePool.hugepages) that the pod sizes, the fit check,
    the autoscaler template and the user data read: the pages the EFA node image reserves at
    boot (110 x vCPUs + 1 of 2 MiB), on every EFA node whatever the job; a pod that asks for
    pages (a multi-node job under a profile that requests them) gets them from that pool."""
    with_hugepages(monkeypatch)
    offer = catalog().instance("aws", instance)
    plan = combo_plan("aws", instance, offer.region, 8, False, nodes=nodes)
    res = training_container(plan)["resources"]
    pod = {k: v for k, v in res["limits"].items() if k.startswith("hugepages-")}
    pools = [p for p in node_pools(plan) if p.role == "gpu"]
    boot = f"{(110 * offer.vcpus + 1) * 2}Mi"
    assert pools and all(p.hugepages == {"hugepages-2Mi": boot} for p in pools)
    assert pod == ({"hugepages-2Mi": "5120Mi"} if nodes > 1 else {})
    assert [r["reasons"] for r in for_plan(plan, catalog()) if not r["fits"]] == []


@pytest.mark.parametrize("instance,published_gib", [("p4de.24xlarge", 1092.9154),
                                                    ("p5.48xlarge", 1957.2935)])
def test_the_pod_limit_stays_within_the_published_node(instance, published_gib):
    """Issue 37 review: the memory limit was the model (1963Gi on a p5), above the allocatable
    memory published EKS p5 nodes report (1957.3 GiB; p4de 1092.9 GiB: the EFA boot-time huge
    pages come off it). Limit and request both stay within it, less the DaemonSets."""
    from reclaunch.manifests.nodes import daemonset_requests
    from reclaunch.manifests.stackfacts import addon_facts

    offer = catalog().instance("aws", instance)
    plan = combo_plan("aws", instance, offer.region, 8, False, nodes=2)
    res = training_container(plan)["resources"]
    pool = next(p for p in node_pools(plan) if p.role == "gpu")
    daemons = daemonset_requests(addon_facts(plan), pool).get("memory", 0)
    assert quantity(res["limits"]["memory"]) <= published_gib * GIB - daemons
    assert quantity(res["requests"]["memory"]) < quantity(res["limits"]["memory"])


def test_a_pod_above_the_modelled_node_is_named_with_its_numbers(monkeypatch):
    monkeypatch.setattr("reclaunch.manifests.job.REQUEST_SHARE", Fraction(11, 10))
    region = catalog().instance("aws", "p5.48xlarge").region
    plan = combo_plan("aws", "p5.48xlarge", region, 8, False, nodes=2)
    bad = [r for r in for_plan(plan, catalog()) if not r["fits"]]
    assert [r["pod"] for r in bad] == [f"{plan.name}/master", f"{plan.name}/worker"]
    assert any("memory: requests" in why and "Gi allocatable" in why
               for why in bad[0]["reasons"]), bad[0]["reasons"]


@pytest.mark.parametrize("verb", [["render"], ["up", "--dry-run"], ["up", "--dry-run", "-o",
                                                                     "yaml"]])
def test_render_and_dry_run_stop_on_a_pod_that_may_not_fit(monkeypatch, verb):
    """Issue 42: the check only `preview` ran now runs without any SDK where the launch is
    built: the objects are printed, then one line per pod that may not fit, and exit 1."""
    from click.testing import CliRunner

    from reclaunch.cli import cli

    spec = "examples/aws-deepfm-p4d.yaml"
    ok = CliRunner().invoke(cli, [*verb[:1], spec, *verb[1:]])
    assert ok.exit_code == 0, ok.output
    assert "may not fit" not in ok.output
    monkeypatch.setattr("reclaunch.manifests.job.REQUEST_SHARE", Fraction(11, 10))
    res = CliRunner().invoke(cli, [*verb[:1], spec, *verb[1:]])
    assert res.exit_code == 1, res.output
    assert "criteo-deepfm/worker (training) may not fit the modelled node:" in res.output
    assert "memory: requests" in res.output and "Traceback" not in res.output
    assert "PyTorchJob" in res.output or "pytorchjob" in res.output.lower()


def test_plan_says_where_the_pod_check_runs():
    """plan renders no pods (its start-up stays small): it says plainly that it did not check
    them and which command does."""
    from click.testing import CliRunner

    from reclaunch.cli import cli

    res = CliRunner().invoke(cli, ["plan", "examples/aws-deepfm-p4d.yaml"])
    assert res.exit_code == 0, res.output
    assert ("pods on nodes: not checked by plan; `reclaunch up examples/aws-deepfm-p4d.yaml "
            "--dry-run` (or render, preview) checks them") in " ".join(res.output.split())  # wrapped
