"""What every cloud's program shares: names, tags, pool layout, storage sizing, add-ons.

Pure Python (no Pulumi import at module level) so tests and `preview` can use it cheaply.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

# The names render, kube, lifecycle and the gc sweep select on: one definition for all.
from reclaunch.tags import CAPACITY_LABEL, CLUSTER_TAG, GPU_LABEL, MANAGED_TAG, POOL_LABEL  # noqa: F401

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

# One place for the Kubernetes minor version on every cloud (EKS, AKS and GKE all offer it).
KUBERNETES_VERSION = "1.33"

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
SYSTEM_POOL_SIZE = (2, 3)                     # min, max nodes for the CPU system pool

# Addon file: k8s/addons.yaml next to this package (repo root).
# Packaged as reclaunch._k8s (pyproject package-dir), so a wheel carries it; fall back to the
# checkout path when running `pulumi up` straight from stacks/<cloud>/ without an install.
def _addons_file() -> Path:
    try:
        from importlib import resources

        path = Path(str(resources.files("reclaunch._k8s").joinpath("addons.yaml")))
        if path.is_file():
            return path
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parent.parent / "k8s" / "addons.yaml"


ADDONS_FILE = _addons_file()

_GCP_LABEL = re.compile(r"[^a-z0-9_-]")


def tags(plan: "Plan", **extra: str) -> dict[str, str]:
    """The tags (AWS, Azure) every resource carries; `gc` finds orphans by them."""
    return {CLUSTER_TAG: plan.name, MANAGED_TAG: "true", **extra}


def label_safe(value: str) -> str:
    """A GCP label value: lowercase letters, digits, '-' and '_', at most 63 characters."""
    return _GCP_LABEL.sub("-", str(value).lower())[:63]


def labels(plan: "Plan", **extra: str) -> dict[str, str]:
    """GCP labels: the same two keys, values made label-safe."""
    return {label_safe(k): label_safe(v) for k, v in tags(plan, **extra).items()}


def name(plan: "Plan", *parts: str, max_len: int = 63) -> str:
    """`<cluster>-<part>...`, shortened with a stable hash when a cloud's limit is hit."""
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
    return {CLUSTER_TAG: plan.name, CAPACITY_LABEL: pool.capacity, GPU_LABEL: "true",
            POOL_LABEL: pool.key}


def fabric_kind(plan: "Plan") -> str:
    """efa | infiniband | tcpx | tcpxo | rdma | ethernet, from the plan's fabric profile."""
    from reclaunch.fabric import get_profile

    return get_profile(plan.fabric).fabric


def spot_max_price(plan: "Plan") -> float | None:
    return plan.spec.spot.max_price if plan.spot else None


def storage_gib(plan: "Plan", minimum: int, step: int = 1, maximum: int | None = None) -> int:
    """Capacity in GiB from `storage.size`, rounded up to what the service sells."""
    size = plan.spec.storage.size
    gib = minimum if not size else max(minimum, math.ceil(size / 2**30))
    gib = math.ceil(gib / step) * step
    return min(gib, maximum) if maximum else gib


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


# ------------------------------------------------------------------ add-ons


@lru_cache(maxsize=2)
def load_addons(path: str = str(ADDONS_FILE)) -> tuple[dict[str, Any], ...]:
    import yaml

    data = yaml.safe_load(Path(path).read_text())
    return tuple(data["addons"])


def addons_for(plan: "Plan") -> list[dict[str, Any]]:
    """The add-ons for this cloud and fabric, in file order."""
    return [a for a in load_addons()
            if plan.cloud in a.get("clouds", [plan.cloud])
            and fabric_kind(plan) in a.get("fabrics", [fabric_kind(plan)])
            and plan.spec.storage.kind in a.get("storage", [plan.spec.storage.kind])]


def install_addons(k8s: Any, pulumi: Any, plan: "Plan", provider: Any,
                   depends_on: list | None = None,
                   values: dict[str, dict] | None = None) -> dict[str, Any]:
    """One pinned resource per add-on; `values` merges cloud-specific Helm values by name."""
    opts = pulumi.ResourceOptions(provider=provider, depends_on=depends_on or [])
    out: dict[str, Any] = {}
    for addon in addons_for(plan):
        rname = name(plan, addon["name"])
        kind = addon["kind"]
        if kind == "helm":
            merged = _merge(addon.get("values", {}), (values or {}).get(addon["name"], {}))
            out[addon["name"]] = k8s.helm.v3.Release(
                rname, name=addon["name"], chart=addon["chart"], version=str(addon["version"]),
                namespace=addon.get("namespace", "kube-system"), create_namespace=True,
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=addon["repo"]),
                values=merged, atomic=True, cleanup_on_fail=True, timeout=900, opts=opts)
        elif kind == "kustomize":
            out[addon["name"]] = k8s.kustomize.v2.Directory(
                rname, directory=addon["source"], opts=opts)
        elif kind == "manifest":
            out[addon["name"]] = k8s.yaml.v2.ConfigFile(rname, file=addon["source"], opts=opts)
        else:  # pragma: no cover - guarded by the addons test
            raise ValueError(f"unknown add-on kind {kind!r} in {ADDONS_FILE}")
    return out


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def data_volume(k8s: Any, pulumi: Any, plan: "Plan", provider: Any, *, driver: str,
                handle: Any, capacity_gib: int, attributes: dict | None = None,
                depends_on: list | None = None) -> Any:
    """A static PV + PVC `<name>-data` in the job namespace for the file system we made."""
    opts = pulumi.ResourceOptions(provider=provider, depends_on=depends_on or [])
    meta_labels = tags(plan)
    ns = k8s.core.v1.Namespace(name(plan, "ns"), metadata={"name": plan.spec.namespace,
                                                          "labels": meta_labels}, opts=opts)
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
        opts=pulumi.ResourceOptions(provider=provider, depends_on=[ns, pv]))


def cephfs_storage_class(k8s: Any, pulumi: Any, plan: "Plan", provider: Any) -> Any:
    """An existing CephFS reached through ceph-csi: `storage.existing` is `clusterID/fsName`."""
    existing = plan.spec.storage.existing or ""
    cluster_id, _, fs_name = existing.partition("/")
    if not cluster_id or not fs_name:
        raise ValueError("storage.kind cephfs needs storage.existing: '<clusterID>/<fsName>'")
    return k8s.storage.v1.StorageClass(
        name(plan, "cephfs"), metadata={"name": name(plan, "cephfs"),
                                        "labels": tags(plan)},
        provisioner="cephfs.csi.ceph.com", reclaim_policy="Retain", allow_volume_expansion=True,
        parameters={"clusterID": cluster_id, "fsName": fs_name,
                    "csi.storage.k8s.io/provisioner-secret-name": "csi-cephfs-secret",
                    "csi.storage.k8s.io/provisioner-secret-namespace": "ceph-csi",
                    "csi.storage.k8s.io/node-stage-secret-name": "csi-cephfs-secret",
                    "csi.storage.k8s.io/node-stage-secret-namespace": "ceph-csi"},
        opts=pulumi.ResourceOptions(provider=provider))
