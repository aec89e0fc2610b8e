"""Issue 12: every pod we render passes the API server's own rules and lands on a node pool.

The schedulability half reads the stacks' declared facts (stacks.StackFacts: node_pools,
job_placement; stacks.common.addon_facts from k8s/addons.yaml). They are part of the product:
a renamed or missing one fails these tests, it never turns them into skips.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
from functools import lru_cache

import pytest

from reclaunch.catalog import load_catalog
from reclaunch.fabric import PROFILES
from reclaunch.manifests.apiserver import api_server_rules
from reclaunch.manifests.job import preflight_job, render
from reclaunch.manifests.placement import launch_objects, pool_capacity, schedule
from reclaunch.manifests.schedule import check, pods_of
from reclaunch.planner import make_plan
from reclaunch.spec import parse_spec
from tests.conftest import EXAMPLES

CLOUD_EXAMPLES = ["aws-deepfm-p4d", "aws-auto-h100", "azure-din-nd96amsr", "gcp-dcnv2-a3mega"]
STORAGE = {"aws": "kind: fsx-lustre\n  size: 1.2TiB", "azure": "kind: azure-files\n  size: 1TiB",
           "gcp": "kind: filestore\n  size: 1TiB"}


@lru_cache(maxsize=1)
def catalog():
    return load_catalog()


def example_plan(stem: str):
    return make_plan(parse_spec((EXAMPLES / f"{stem}.yaml").read_text(), f"{stem}.yaml"),
                     catalog())


def combo_plan(cloud: str, instance: str, region: str, gpus: int, spot: bool,
               inter_node: str = "auto", nodes: int = 2):
    text = f"""
name: fit-{instance.lower().replace('_', '-').replace('.', '-')[:30]}
cloud: {cloud}
region: {region}
nodes: {nodes}
gpus_per_node: {gpus}
instance_type: {instance}
interconnect: {{inter_node: {inter_node}}}
storage:
  {STORAGE[cloud]}
spot: {{enabled: {str(spot).lower()}}}
autoscaling: {{min_nodes: 1, max_nodes: {nodes}}}
job:
  image: registry.example/train:1
  command: [python, /app/train.py]
  batch_size: 1024
  dataset: {{samples: 1e8}}
model: {{preset: dlrm}}
"""
    return make_plan(parse_spec(text, "combo.yaml"), catalog())


def combos():
    """One instance per fabric profile member the catalog sells, x spot/on-demand, plus
    ethernet forced on an RDMA instance of each cloud."""
    out, seen = [], set()
    rows = {(o.cloud, o.instance_type): o for o in catalog().offers}
    for prof in PROFILES:
        for member in prof.members:
            for (cloud, it), o in sorted(rows.items()):
                if cloud in prof.clouds and it.lower().startswith(member.prefix.lower()) \
                        and o.fabric == prof.fabric and (cloud, it) not in seen:
                    seen.add((cloud, it))
                    out += [pytest.param(cloud, it, o.region, o.gpu_count, s, "auto",
                                         id=f"{it}-{'spot' if s else 'od'}") for s in (True, False)]
                    break
    for cloud, it in (("aws", "p5.48xlarge"), ("azure", "Standard_ND96isr_H100_v5"),
                      ("gcp", "a3-megagpu-8g")):
        o = rows[(cloud, it)]
        out.append(pytest.param(cloud, it, o.region, o.gpu_count, True, "ethernet",
                                id=f"{it}-ethernet-spot"))
    return out


def all_objects(plan):
    return [o for objs in launch_objects(plan).values() for o in objs] + render(plan)


def stack_contract(plan):
    pkg = importlib.import_module(f"stacks.{plan.cloud}")
    common = importlib.import_module("stacks.common")
    return pkg.node_pools(plan), common.addon_facts(plan)


def rows_for(plan):
    pools, addons = stack_contract(plan)
    return schedule(plan, pools, addons, catalog())


def bad(rows):
    return [(r["pod"], r["reasons"]) for r in rows if not r["fits"]]


# ---- the API server's rules -------------------------------------------------------------------

@pytest.mark.parametrize("stem", CLOUD_EXAMPLES)
def test_examples_pass_api_server_rules(stem):
    plan = example_plan(stem)
    for obj in all_objects(plan):
        assert api_server_rules(obj) == [], obj["kind"]


@pytest.mark.parametrize("cloud,instance,region,gpus,spot,inter", combos())
def test_every_combination_passes_api_server_rules(cloud, instance, region, gpus, spot, inter):
    plan = combo_plan(cloud, instance, region, gpus, spot, inter)
    for obj in all_objects(plan):
        assert api_server_rules(obj) == [], obj["kind"]


def _container(obj):
    return next(iter(obj["spec"]["pytorchReplicaSpecs"].values()))["template"]["spec"][
        "containers"][0]


def test_hugepages_without_cpu_or_memory_is_rejected():
    """The AWS preflight as it was: limits only, hugepages and devices, no cpu/memory (no EFA
    profile asks for hugepages any more: they are planted)."""
    pre = preflight_job(example_plan("aws-deepfm-p4d"))
    assert api_server_rules(pre) == []
    res = _container(pre)["resources"]
    assert res["requests"]["cpu"] and res["requests"]["memory"]
    res["limits"]["hugepages-2Mi"] = "5120Mi"
    res.pop("requests")
    res["limits"].pop("memory")
    assert any("HugePages require cpu or memory" in p for p in api_server_rules(pre))


@pytest.mark.parametrize("mutate,message", [
    (lambda r: r["requests"].update({"vpc.amazonaws.com/efa": 2}), "must be equal to"),
    (lambda r: r["limits"].update({"vpc.amazonaws.com/efa": "1500m"}), "must be an integer"),
    (lambda r: r["limits"].update({"hugepages-2Mi": "5121Mi"}), "not positive integer multiple"),
    (lambda r: r["requests"].update({"memory": "4000Gi"}), "must be less than or equal"),
    (lambda r: (r["limits"].pop("vpc.amazonaws.com/efa"),
                r["requests"].update({"vpc.amazonaws.com/efa": 4})), "Limit must be set"),
    (lambda r: r["limits"].update({"gpu": 8}), "standard resource for containers"),
])
def test_planted_resource_faults_are_rejected(mutate, message):
    job = next(o for o in render(example_plan("aws-deepfm-p4d")) if o["kind"] == "PyTorchJob")
    mutate(_container(job)["resources"])
    assert any(message in p for p in api_server_rules(job)), api_server_rules(job)


def test_probe_on_plain_init_container_is_rejected():
    job = next(o for o in render(example_plan("gcp-dcnv2-a3mega")) if o["kind"] == "PyTorchJob")
    spec = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    assert spec["initContainers"][0]["startupProbe"] and api_server_rules(job) == []
    spec["initContainers"][0].pop("restartPolicy")
    assert any("startupProbe" in p for p in api_server_rules(job))


# ---- schedulability: every example and combination fits ---------------------------------------

@pytest.mark.parametrize("stem", CLOUD_EXAMPLES)
def test_every_example_pod_is_placed(stem):
    rows = rows_for(example_plan(stem))
    assert {r["role"] for r in rows} >= {"training", "preflight"}
    assert bad(rows) == []


@pytest.mark.parametrize("cloud,instance,region,gpus,spot,inter", combos())
def test_every_combination_is_placed(cloud, instance, region, gpus, spot, inter):
    plan = combo_plan(cloud, instance, region, gpus, spot, inter)
    rows = rows_for(plan)
    assert bad(rows) == []
    roles = {r["role"] for r in rows}
    assert ("rendezvous" in roles) == spot


# ---- planted faults fail with the right reason --------------------------------------------------

def _pools(plan):
    return [copy.deepcopy(p) for p in stack_contract(plan)[0]]


def _rows(plan, pools=None, addons=None, objs=None):
    got_pools, got_addons = stack_contract(plan)
    pools = got_pools if pools is None else pools
    addons = got_addons if addons is None else addons
    if objs is None:
        return schedule(plan, pools, addons, catalog())
    capacity = {p.name: pool_capacity(plan, p, addons, catalog()) for p in pools}
    return check(pods_of(objs, "training"), pools, addons, capacity)


def _reasons(rows, pod_suffix="/worker"):
    row = next(r for r in rows if r["pod"].endswith(pod_suffix))
    assert not row["fits"]
    return " | ".join(row["reasons"])


def test_efa_plugin_needs_the_label_no_pool_sets():
    plan = example_plan("aws-deepfm-p4d")
    pools = _pools(plan)
    for p in pools:
        p.labels.pop("vpc.amazonaws.com/efa.present", None)
    why = _reasons(_rows(plan, pools=pools))
    assert "vpc.amazonaws.com/efa: aws-efa-k8s-device-plugin needs node label " \
           "vpc.amazonaws.com/efa.present=true" in why


def test_rdma_ib_nobody_advertises():
    plan = example_plan("azure-din-nd96amsr")
    addons = [a for a in stack_contract(plan)[1] if "rdma/ib" not in a["advertises"]]
    assert "rdma/ib: no add-on advertises it" in _reasons(_rows(plan, addons=addons))


def test_device_plugin_not_tolerating_the_aks_spot_taint():
    plan = example_plan("azure-din-nd96amsr")
    addons = copy.deepcopy(stack_contract(plan)[1])
    for a in addons:
        if "nvidia.com/gpu" in a["advertises"]:
            a["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists",
                                 "effect": "NoSchedule"}]
    rows = _rows(plan, addons=addons)
    row = next(r for r in rows if r["pod"] == "din-spot/worker")
    # It would still fit the on-demand pool; the spot pool would be billed idle: a fault.
    assert not row["fits"] and row["pool"] == "gpu-od"
    assert "gpu-spot: nvidia.com/gpu: nvidia-device-plugin does not tolerate taint " \
           "kubernetes.azure.com/scalesetpriority=spot:NoSchedule" in row["reasons"]


def test_pod_not_tolerating_a_pool_taint():
    plan = example_plan("aws-deepfm-p4d")
    objs = [o for o in render(plan) if o["kind"] == "PyTorchJob"]
    spec = objs[0]["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    spec["tolerations"] = []
    why = _reasons(_rows(plan, objs=objs))
    assert "taint nvidia.com/gpu=present:NoSchedule not tolerated" in why


def test_label_no_pool_sets():
    plan = example_plan("gcp-dcnv2-a3mega")
    objs = [o for o in render(plan) if o["kind"] == "PyTorchJob"]
    for rs in objs[0]["spec"]["pytorchReplicaSpecs"].values():
        rs["template"]["spec"]["nodeSelector"]["node.kubernetes.io/instance-type"] = "a3-highgpu-8g"
    assert "lacks label node.kubernetes.io/instance-type=a3-highgpu-8g" in _reasons(
        _rows(plan, objs=objs))


def test_request_above_allocatable():
    plan = example_plan("aws-auto-h100")
    objs = [o for o in render(plan) if o["kind"] == "PyTorchJob"]
    c = objs[0]["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    c["resources"]["requests"]["memory"] = c["resources"]["limits"]["memory"] = \
        f"{int(plan.offer.ram_gib)}Gi"   # the whole node: reserves and eviction left out
    why = _reasons(_rows(plan, objs=objs))
    assert "memory: requests" in why and "allocatable" in why


def test_more_replicas_than_one_fabric_holds():
    plan = example_plan("azure-din-nd96amsr")
    plan = dataclasses.replace(plan, nodes=3, max_nodes=3)
    pools = _pools(plan)
    for p in pools:
        if p.role == "gpu":
            p.max_nodes = 2
    rows = _rows(plan, pools=pools)
    row = next(r for r in rows if r["pod"].endswith("/worker") and r["role"] == "training")
    assert not row["fits"] and "at most 2 on one fabric" in row["reasons"][-1]


def test_store_needs_the_system_pool():
    plan = example_plan("aws-deepfm-p4d")
    pools = [p for p in _pools(plan) if p.role != "system"]
    rows = _rows(plan, pools=pools)
    row = next(r for r in rows if r["role"] == "rendezvous")
    assert not row["fits"] and row["reasons"] == ["the stack has no system node pool"]
    # ... and on a system pool that lost its label:
    pools = _pools(plan)
    for p in pools:
        if p.role == "system":
            p.labels.pop("reclaunch.io/pool")
    row = next(r for r in _rows(plan, pools=pools) if r["role"] == "rendezvous")
    assert not row["fits"] and "system: lacks label reclaunch.io/pool=system" in row["reasons"]


def test_api_server_rejection_is_a_schedule_reason():
    plan = example_plan("aws-deepfm-p4d")
    pre = preflight_job(plan)
    res = _container(pre)["resources"]
    res["limits"]["hugepages-2Mi"] = "5120Mi"
    res.pop("requests")
    res["limits"].pop("memory")
    stack_contract(plan)
    rows = check(pods_of([pre], "preflight"), _pools(plan), stack_contract(plan)[1], {})
    assert not rows[0]["fits"] and "HugePages require cpu or memory" in rows[0]["reasons"][0]


def test_unknown_instance_shape_is_not_assumed_to_fit():
    plan = example_plan("aws-deepfm-p4d")
    pools = _pools(plan)
    for p in pools:
        if p.role == "system":
            p.instance_type = "m9z.hyper"
    row = next(r for r in _rows(plan, pools=pools) if r["role"] == "rendezvous")
    assert not row["fits"] and "no cpu/memory figures for instance m9z.hyper" in row["reasons"][0]
