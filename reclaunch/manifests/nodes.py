"""What a node of the plan's pools leaves to our pods: the node model (catalog/node.py) of the
pool's instance, with the pool's hugepages, less the requests of the add-on DaemonSets that
run on that pool (k8s/addons.yaml, the same selector rules as the schedulability check).

Both sides read it: the render sizes the training pod from `job_node(plan)` and the check
(manifests/placement.py) fits every pod against `pool_capacity(...)`, so the request and the
check start from one figure.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from reclaunch.catalog.node import NodeModel, node_model, system_shape
from reclaunch.manifests.apiserver import quantity
from reclaunch.manifests.schedule import addon_blocker

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan


def _offer(plan: "Plan", instance_type: str, catalog: Any):
    if catalog is not None:
        found = catalog.instance(plan.cloud, instance_type)
        if found is not None:
            return found
    if plan.offer is not None and plan.offer.instance_type == instance_type:
        return plan.offer
    return None


def _get(pool: Any, field: str, default: Any = None) -> Any:
    return pool.get(field, default) if isinstance(pool, Mapping) else getattr(pool, field, default)


def pool_node(plan: "Plan", pool: Any, catalog: Any = None) -> NodeModel | None:
    """The model of one node of `pool` (None when its instance's size is not known)."""
    it = _get(pool, "instance_type")
    offer = _offer(plan, it, catalog)
    shape = (offer.vcpus, offer.ram_gib) if offer is not None else system_shape(it)
    if shape is None:
        return None
    huge = {k: int(quantity(v)) for k, v in (_get(pool, "hugepages") or {}).items()}
    return node_model(plan.cloud, it, shape[0], shape[1], huge)


def daemonset_requests(addons: Sequence[Mapping[str, Any]], pool: Any) -> dict[str, Fraction]:
    """The summed requests of the add-on DaemonSets whose pods run on `pool`'s nodes."""
    out: dict[str, Fraction] = {}
    for a in addons:
        if a.get("requests") and addon_blocker(a, pool) is None:
            for k, v in a["requests"].items():
                out[k] = out.get(k, Fraction(0)) + quantity(v)
    return out


def _devices(plan: "Plan", instance_type: str, catalog: Any) -> dict[str, Fraction]:
    """The devices a node of this instance type has (what a device plugin can advertise)."""
    from reclaunch.fabric import profile_for

    offer = _offer(plan, instance_type, catalog)
    if offer is None or not offer.gpu_count:
        return {}
    out = {"nvidia.com/gpu": Fraction(offer.gpu_count)}
    prof = profile_for(plan.cloud, instance_type, "auto", catalog)
    out.update({k: quantity(v) for k, v in prof.resources.items()})
    return out


def pool_capacity(plan: "Plan", pool: Any, addons: Sequence[Mapping[str, Any]],
                  catalog: Any = None) -> dict[str, Fraction] | None:
    """What one node of `pool` offers our pods, or None when its size is not known."""
    node = pool_node(plan, pool, catalog)
    if node is None:
        return None
    out = node.for_pods(daemonset_requests(addons, pool))
    out.update(_devices(plan, _get(pool, "instance_type"), catalog))
    return out


def job_node(plan: "Plan") -> dict[str, Fraction] | None:
    """cpu and memory one node leaves to the job's pod: the smallest over the stack's GPU pools
    (a spot and an on-demand pool of one instance type differ only in labels), or, for a target
    without a stack (a cluster you bring, whose offer is already what its nodes have free), the
    offer itself. None without an offer (cloud: local renders no sizes)."""
    from reclaunch.manifests.stackfacts import addon_facts, node_pools, stack_package

    if plan.offer is None:
        return None
    if stack_package(plan.cloud) is None:
        node = node_model(plan.cloud, plan.offer.instance_type, plan.offer.vcpus,
                          plan.offer.ram_gib)
        return node.for_pods()
    addons = addon_facts(plan)
    found = [pool_capacity(plan, p, addons) for p in node_pools(plan)
             if _get(p, "role") == "gpu"]
    found = [f for f in found if f is not None]
    if not found:
        return None
    return {k: min(f[k] for f in found) for k in ("cpu", "memory")}
