"""What every cloud's program shares: names, tags, pool layout, storage sizing, add-ons.

Pure Python (no Pulumi import at module level) so tests and `preview` can use it cheaply.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reclaunch import clouds
# The names render, kube, lifecycle and the gc sweep select on: one definition for all.
from reclaunch.tags import CAPACITY_LABEL, CLUSTER_TAG, GPU_LABEL, MANAGED_TAG, POOL_LABEL  # noqa: F401
from stacks.fabric_facts import fabric_facts, fabric_kind  # noqa: F401

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
SYSTEM_POOL_SIZE = (2, 3)                     # min, max nodes for the CPU system pool
# Node label whose value names the RDMA fabric a GPU node is on. Pools that share a fabric
# share the value; a job pinned to one value (required podAffinity, topologyKey = this label)
# never spans two fabrics. On AKS each VM scale set is its own InfiniBand fabric, so spot and
# regular ND pools get different values; on EKS/GKE every GPU pool reaches the same fabric.
FABRIC_GROUP_LABEL = "reclaunch.io/fabric-group"

# Addon file: k8s/addons.yaml next to this package (repo root).
# Packaged as reclaunch._k8s (pyproject package-dir), so a wheel carries it; fall back to the
# checkout path when running `pulumi up` straight from stacks/<cloud>/ without an install.
def _addons_file() -> Path:
    checkout = Path(__file__).resolve().parent.parent / "k8s" / "addons.yaml"
    if checkout.is_file():   # a checkout or editable install: no importlib.resources import
        return checkout
    try:
        from importlib import resources

        path = Path(str(resources.files("reclaunch._k8s").joinpath("addons.yaml")))
        if path.is_file():
            return path
    except ModuleNotFoundError:
        pass
    return checkout


ADDONS_FILE = _addons_file()

_NOT_LABEL = re.compile(r"[^a-z0-9_-]")   # what a GCP label value may not hold


def tags(plan: "Plan", **extra: str) -> dict[str, str]:
    """The tags (AWS, Azure) every resource carries; `gc` finds orphans by them."""
    return {CLUSTER_TAG: plan.name, MANAGED_TAG: "true", **extra}


def label_safe(value: str) -> str:
    """A GCP label value: lowercase letters, digits, '-' and '_', at most 63 characters."""
    return _NOT_LABEL.sub("-", str(value).lower())[:63]


def labels(plan: "Plan", **extra: str) -> dict[str, str]:
    """GCP labels: the same two keys, values made label-safe."""
    return {label_safe(k): label_safe(v) for k, v in tags(plan, **extra).items()}


# What Pulumi appends to a name it generates: "-" and 7 random hex characters (bridged
# providers: "name plus 8 random chars", pulumi/pulumi-azure#159), 8 hex on azure-native
# (pulumi/pulumi-azure-native#4294); the engine refuses a result over the property's limit.
AUTONAME_SUFFIX = 8


def name(plan: "Plan", *parts: str, max_len: int = 63, auto: bool = False) -> str:
    """`<cluster>-<part>...`, shortened with a stable hash when a cloud's limit is hit; `auto`:
    a logical name Pulumi turns into the physical one (max_len is that property's limit)."""
    max_len -= AUTONAME_SUFFIX if auto else 0
    full = "-".join([plan.name, *[p for p in parts if p]])
    if len(full) <= max_len:
        return full
    digest = hashlib.sha1(full.encode()).hexdigest()[:6]
    return f"{full[: max_len - 7].rstrip('-')}-{digest}"


@dataclass(frozen=True)
class Pool:
    """One GPU node pool: a size range, never a list of nodes."""

    key: str            # short name: gpu, gpu-spot, gpu-od
    capacity: str       # spot | on-demand
    min_nodes: int
    max_nodes: int
    desired: int
    priority: int       # autoscaler expander priority: higher is tried first


@dataclass
class NodePool:
    """One node pool as the cluster will see it (stacks.StackFacts.node_pools returns these).

    Built by the pure `stacks.<cloud>.node_pools(plan)`; the Pulumi program creates its pools
    from the same list, so the schedulability check and the cloud cannot disagree. `labels`
    holds every label a node of the pool carries at registration: ours, the cloud's own
    (instance type, capacity type, pool name, accelerator) and the ones the stack asks the
    kubelet to set for add-ons (nvidia.com/gpu.present, vpc.amazonaws.com/efa.present)."""

    name: str                        # pool key: system | gpu | gpu-spot | gpu-od
    role: str                        # "system" | "gpu"
    instance_type: str
    spot: bool
    labels: dict[str, str]
    taints: list[dict[str, str]]     # {key, value, effect}
    min_nodes: int
    max_nodes: int
    desired: int = 0                 # nodes at creation (the autoscaler owns it after)
    priority: int = 0                # autoscaler preference: higher is tried first
    # Pre-allocated huge pages a node advertises (resource name -> quantity), e.g.
    # {"hugepages-2Mi": "5120Mi"}; they come out of allocatable memory.
    hugepages: dict[str, str] = field(default_factory=dict)
    cloud_name: str = ""             # the pool's name in the cloud (ASG / agent pool / node pool)


def node_template(plan: "Plan", pool: NodePool) -> dict[str, str]:
    """{cpu, memory} one node of GPU pool `pool` will advertise as allocatable (the node model,
    reclaunch/catalog/node.py, with the pool's hugepages): what the cluster autoscaler's
    scale-from-zero template must say. It takes the template's figures as the node's
    allocatable and subtracts the DaemonSets itself; left at the instance's nominal RAM it
    would add GPU nodes for a pod that no real node of the pool can hold."""
    from reclaunch.catalog.node import MIB, node_model
    from reclaunch.spec.units import parse_size

    huge = {k: parse_size(v) for k, v in pool.hugepages.items()}
    alloc = node_model(plan.cloud, pool.instance_type, plan.offer.vcpus, plan.offer.ram_gib,
                       huge).allocatable()
    return {"cpu": f"{math.floor(alloc['cpu'] * 1000)}m",
            "memory": f"{math.floor(alloc['memory'] / MIB)}Mi"}


def taint_str(t: dict[str, str]) -> str:
    """`key=value:Effect`, the kubelet / AKS notation."""
    return f"{t['key']}={t['value']}:{t['effect']}"


def gpu_pools(plan: "Plan") -> list[Pool]:
    """Spot preferred with an on-demand pool scaled from zero, or a single on-demand pool."""
    lo, hi = plan.min_nodes, max(plan.max_nodes, plan.nodes)
    if not plan.spot:
        return [Pool("gpu", "on-demand", lo, hi, plan.nodes, 10)]
    pools = [Pool("gpu-spot", "spot", lo, hi, plan.nodes, 50)]
    if plan.spec.spot.fallback == "on-demand":
        pools.append(Pool("gpu-od", "on-demand", 0, hi, 0, 10))
    return pools


def node_labels(plan: "Plan", pool: Pool) -> dict[str, str]:
    """The labels reclaunch itself gives a GPU pool's nodes (the stack sets them)."""
    return {CLUSTER_TAG: plan.name, CAPACITY_LABEL: pool.capacity, GPU_LABEL: "true",
            POOL_LABEL: pool.key}


# Labels every kubelet sets on its own node (k8s.io/docs/reference/labels-annotations-taints).
KUBELET_LABELS = {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}


def api_cidrs(plan: "Plan") -> list[str]:
    """Who may reach the Kubernetes API from outside the network: `security.api_cidrs`, else
    the `reclaunch:apiCidrs` stack config `up` sets to the address it runs from. [] means
    nobody (private endpoint only; what a preview with neither shows)."""
    if plan.spec.security.api_cidrs:
        return list(plan.spec.security.api_cidrs)
    try:
        import pulumi

        found = pulumi.Config("reclaunch").get_object("apiCidrs")
    except Exception:  # noqa: BLE001 - outside an engine run there is no config
        found = None
    return [str(x) for x in found or []]


def spot_max_price(plan: "Plan") -> float | None:
    return plan.spec.spot.max_price if plan.spot else None


def local_ssd_count(plan: "Plan", disk_gb: int = 375) -> int:
    nvme = plan.offer.local_nvme_gb if plan.offer else 0
    return int(round(nvme / disk_gb)) if nvme else 0


def warn(message: str) -> None:
    """A Pulumi warning when running under the engine, a plain log line otherwise."""
    try:
        import pulumi
        pulumi.log.warn(message)
    except Exception:  # noqa: BLE001 - warnings must never fail a deployment
        import logging
        logging.getLogger("reclaunch.stacks").warning(message)


@lru_cache(maxsize=2)
def load_addon_file(path: str = str(ADDONS_FILE)) -> dict[str, Any]:
    import yaml

    return yaml.safe_load(Path(path).read_text())


def load_addons(path: str = str(ADDONS_FILE)) -> tuple[dict[str, Any], ...]:
    """The bundled add-ons, then those a registered cloud ships (CloudFacts.addon_file)."""
    own = [a for f in clouds.all_facts() if f.addon_file and path == str(ADDONS_FILE)
           for a in load_addon_file(str(f.home / f.addon_file))["addons"]]
    return (*load_addon_file(path)["addons"], *own)


def gpudirect_release(kind: str = "tcpxo") -> dict[str, str]:
    """The pinned GPUDirect row (installer + rxdm images, manifest commit) from addons.yaml:
    the job's tcpxo-daemon image comes from here, the installer add-on from the same commit."""
    return dict(load_addon_file()["gpudirect"][kind])


def addons_for(plan: "Plan", *, include_managed: bool = False) -> list[dict[str, Any]]:
    """The add-ons for this cloud, fabric and storage kind, in file order. `managed` ones
    (installed by the cloud itself) only with include_managed: they carry facts, not installs."""
    # Which cloud or fabric an add-on belongs to is its facts' `addons` (reclaunch/clouds.py);
    # one that none claims belongs everywhere.
    facts = list(clouds.all_facts())
    by_cloud = {a for f in facts for a in f.addons}
    by_fabric = {a for fab in clouds.fabrics().values() for a in fab.addons}
    mine = set(clouds.get(plan.cloud).addons)
    fabric = set(clouds.fabric(fabric_kind(plan)).addons)
    return [a for a in load_addons()
            if (a["name"] not in by_cloud or a["name"] in mine)
            and (a["name"] not in by_fabric or a["name"] in fabric)
            and plan.spec.storage.kind in a.get("storage", [plan.spec.storage.kind])
            and (include_managed or a["kind"] != "managed")]


def addon_facts(plan: "Plan") -> list[dict[str, Any]]:
    """Contract 3: per add-on on this cluster (installed or cloud-managed), what it advertises
    and where its pods can run: {name, advertises, node_selector, node_selector_in,
    node_selector_exists, tolerations, requests} (requests: one DaemonSet pod's, {} if none)."""
    return [{"name": a["name"], "advertises": list(a.get("advertises", [])),
             "node_selector": dict(a.get("node_selector", {})),
             "node_selector_in": {k: list(v) for k, v in a.get("node_selector_in", {}).items()},
             "node_selector_exists": list(a.get("node_selector_exists", [])),
             "tolerations": [dict(t) for t in a.get("tolerations", [])],
             "requests": {k: str(v) for k, v in (a.get("requests") or {}).items()}}
            for a in addons_for(plan, include_managed=True)
            if any(k in a for k in ("advertises", "tolerations", "node_selector",
                                    "node_selector_in", "node_selector_exists", "requests"))]


def addon_selects(addon: dict[str, Any], labels: dict[str, str]) -> list[str]:
    """Why the add-on's pods cannot run on a node with these labels ([] = they can)."""
    why = [f"needs label {k}={v}" for k, v in addon.get("node_selector", {}).items()
           if labels.get(k) != str(v)]
    why += [f"needs label {k} in {', '.join(map(str, vs))}"
            for k, vs in addon.get("node_selector_in", {}).items()
            if labels.get(k) not in [str(v) for v in vs]]
    why += [f"needs label {k}" for k in addon.get("node_selector_exists", []) if k not in labels]
    return why


def tolerates(toleration: dict[str, Any], taint: dict[str, str]) -> bool:
    """Kubernetes' rule (core/v1 Toleration.ToleratesTaint)."""
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    key = toleration.get("key")
    if key and key != taint.get("key"):
        return False
    if toleration.get("operator", "Equal") == "Exists":
        return True
    return str(toleration.get("value", "")) == str(taint.get("value", ""))


def untolerated(tolerations: list[dict[str, Any]], taints: list[dict[str, str]]) -> list[dict]:
    """The NoSchedule/NoExecute taints none of the tolerations tolerates."""
    return [t for t in taints if t.get("effect") in ("NoSchedule", "NoExecute")
            and not any(tolerates(tol, t) for tol in tolerations)]


def _set_path(values: dict, dotted: str, value: Any) -> dict:
    """A copy of `values` with `value` at a dotted path ("node.tolerations")."""
    head, _, rest = dotted.partition(".")
    out = dict(values)
    out[head] = _set_path(out.get(head) or {}, rest, value) if rest else value
    return out


def helm_values(addon: dict[str, Any], extra: dict | None = None,
                facts: dict[str, Any] | None = None) -> dict:
    """The chart values: the file's, the stack's (`extra`), then the facts written at
    `values_paths` so what is deployed is exactly what the facts say. `facts` adds those
    that follow the cluster's Kubernetes minor (stacks.versions.pinned_facts)."""
    merged = _merge(addon.get("values") or {}, extra or {})
    known = {**addon, **(facts or {})}
    for fact, path in (addon.get("values_paths") or {}).items():
        merged = _set_path(merged, path, known[fact])
    return merged


def manifest_sources(addon: dict[str, Any]) -> list[str]:
    """URLs as they are; bare names are files next to addons.yaml."""
    return [s if "://" in s else str(ADDONS_FILE.parent / s) for s in addon["sources"]]


def install_addons(k8s: Any, pulumi: Any, plan: "Plan", provider: Any,
                   depends_on: list | None = None,
                   values: dict[str, dict] | None = None,
                   facts: Any = None) -> dict[str, Any]:
    """One pinned resource per add-on; `values` merges cloud-specific Helm values by name;
    `facts(addon)` gives the facts that follow the cluster minor (stacks.versions)."""
    out: dict[str, Any] = {}
    for addon in addons_for(plan):
        after = [out[d] for d in addon.get("depends_on", []) if d in out]
        opts = pulumi.ResourceOptions(provider=provider, depends_on=[*(depends_on or []), *after])
        rname = name(plan, addon["name"])
        kind = addon["kind"]
        if kind == "helm":
            out[addon["name"]] = k8s.helm.v3.Release(
                rname, name=addon["name"], chart=addon["chart"], version=str(addon["version"]),
                namespace=addon.get("namespace", "kube-system"), create_namespace=True,
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=addon["repo"]),
                values=helm_values(addon, (values or {}).get(addon["name"]),
                                   facts(addon) if facts else None),
                atomic=True, cleanup_on_fail=True, timeout=900, opts=opts)
        elif kind == "kustomize":
            out[addon["name"]] = k8s.kustomize.v2.Directory(
                rname, directory=addon["source"], opts=opts)
        elif kind == "manifest":
            out[addon["name"]] = k8s.yaml.v2.ConfigGroup(
                rname, files=manifest_sources(addon), opts=opts)
        else:  # pragma: no cover - guarded by the addons test
            raise ValueError(f"unknown add-on kind {kind!r} in {ADDONS_FILE}")
    return out


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


class JobNamespace:
    """The job's Namespace, registered once and shared by the data volume and the trainer's
    ServiceAccount: the engine refuses a second `<name>-ns` (a duplicate URN)."""

    def __init__(self, k8s: Any, pulumi: Any, plan: "Plan", provider: Any):
        self._args, self._ns = (k8s, pulumi, plan, provider), None

    def get(self) -> Any:
        if self._ns is None:
            k8s, pulumi, plan, provider = self._args
            self._ns = k8s.core.v1.Namespace(
                name(plan, "ns"), metadata={"name": plan.spec.namespace, "labels": tags(plan)},
                opts=pulumi.ResourceOptions(provider=provider))
        return self._ns


def data_volume(k8s: Any, pulumi: Any, plan: "Plan", provider: Any, *, namespace: JobNamespace,
                driver: str, handle: Any, capacity_gib: int, attributes: dict | None = None,
                depends_on: list | None = None) -> Any:
    """A static PV + PVC `<name>-data` in the job namespace for the file system we made."""
    opts = pulumi.ResourceOptions(provider=provider, depends_on=depends_on or [])
    meta_labels = tags(plan)
    pv_name = name(plan, "data")
    pv = k8s.core.v1.PersistentVolume(pv_name, metadata={"name": pv_name, "labels": meta_labels},
        spec={"capacity": {"storage": f"{capacity_gib}Gi"}, "accessModes": ["ReadWriteMany"],
              "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
              "csi": {"driver": driver, "volumeHandle": handle,
                      "volumeAttributes": attributes or {}}}, opts=opts)
    return k8s.core.v1.PersistentVolumeClaim(pv_name + "-claim", metadata={
        "name": pv_name, "namespace": plan.spec.namespace, "labels": meta_labels},
        spec={"accessModes": ["ReadWriteMany"], "storageClassName": "", "volumeName": pv_name,
              "resources": {"requests": {"storage": f"{capacity_gib}Gi"}}},
        opts=pulumi.ResourceOptions(provider=provider, depends_on=[namespace.get(), pv]))


def cephfs_storage_class(k8s: Any, pulumi: Any, plan: "Plan", provider: Any) -> Any:
    """An existing CephFS reached through ceph-csi: `storage.existing` is `clusterID/fsName`;
    the class is named as the claim render writes expects it (the kind's storage_class)."""
    cls = clouds.storage_kind("cephfs").storage_class.format(name=plan.name)
    existing = plan.spec.storage.existing or ""
    cluster_id, _, fs_name = existing.partition("/")
    if not cluster_id or not fs_name:
        raise ValueError("storage.kind cephfs needs storage.existing: '<clusterID>/<fsName>'")
    return k8s.storage.v1.StorageClass(
        name(plan, "cephfs"), metadata={"name": cls, "labels": tags(plan)},
        provisioner="cephfs.csi.ceph.com", reclaim_policy="Retain", allow_volume_expansion=True,
        parameters={"clusterID": cluster_id, "fsName": fs_name,
                    "csi.storage.k8s.io/provisioner-secret-name": "csi-cephfs-secret",
                    "csi.storage.k8s.io/provisioner-secret-namespace": "ceph-csi",
                    "csi.storage.k8s.io/node-stage-secret-name": "csi-cephfs-secret",
                    "csi.storage.k8s.io/node-stage-secret-namespace": "ceph-csi"},
        opts=pulumi.ResourceOptions(provider=provider))
