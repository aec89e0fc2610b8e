"""Issue 37: the autoscaler's scale-from-zero templates advertise what a node of the pool will
really have allocatable (the node model), not the instance's nominal size, and a pod the render
sized for that node fits the template with the pool's DaemonSets beside it."""

from __future__ import annotations

from reclaunch.catalog.node import GIB
from reclaunch.manifests.apiserver import quantity
from reclaunch.manifests.job import render
from reclaunch.manifests.nodes import daemonset_requests, pool_node
from reclaunch.manifests.stackfacts import addon_facts, node_pools
from stacks.common import node_template

AWS_TPL = "k8s.io/cluster-autoscaler/node-template/resources/"
AZ_TPL = "k8s.io_cluster-autoscaler_node-template_resources_"


def _of(resources, typ):
    return [r for r in resources if r["type"] == typ]


def _pod_requests(plan):
    job = next(o for o in render(plan) if o["kind"] == "PyTorchJob")
    spec = next(iter(job["spec"]["pytorchReplicaSpecs"].values()))["template"]["spec"]
    return {k: quantity(v) for k, v in spec["containers"][0]["resources"]["requests"].items()}


def _check(plan, pool, tags, prefix):
    want = node_template(plan, pool)
    assert {k: tags[prefix + k] for k in ("cpu", "memory")} == want
    node = pool_node(plan, pool)
    alloc = node.allocatable()
    memory, cpu = quantity(want["memory"]), quantity(want["cpu"])
    # the model's allocatable, rounded down; well below the nominal RAM the template had
    assert alloc["memory"] - 2**20 < memory <= alloc["memory"] < plan.offer.ram_gib * GIB
    assert alloc["cpu"] - 1 / 1000 < cpu <= alloc["cpu"] < plan.offer.vcpus
    # what the autoscaler simulates: the DaemonSets and the training pod on one template node
    ds = daemonset_requests(addon_facts(plan), pool)
    pod = _pod_requests(plan)
    assert pod["memory"] + ds.get("memory", 0) <= memory
    assert pod["cpu"] + ds.get("cpu", 0) <= cpu


def test_eks_groups_advertise_the_modelled_allocatable(previews):
    plan, res = previews("aws-p5")
    groups = {r["name"]: r["inputs"] for r in _of(res, "aws:autoscaling/group:Group")}
    for pool in node_pools(plan):
        if pool.role != "gpu":
            continue
        tags = {t["key"]: t["value"] for t in groups[pool.cloud_name]["tags"]}
        _check(plan, pool, tags, AWS_TPL)


def test_aks_gpu_pools_carry_the_template_tags(previews):
    plan, res = previews("azure")
    pools = {r["inputs"]["agentPoolName"]: r["inputs"]
             for r in _of(res, "azure-native:containerservice:AgentPool")}
    gpu = [p for p in node_pools(plan) if p.role == "gpu"]
    assert gpu
    for pool in gpu:
        _check(plan, pool, pools[pool.cloud_name]["tags"], AZ_TPL)
