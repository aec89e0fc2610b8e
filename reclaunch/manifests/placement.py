"""The launch's schedulability check from a plan: every pod we would apply, against the
stack's node pools and add-ons (values in, rows out; the caller fetches pools and facts).

    rows = schedule(plan, pools, addons, catalog)   # [{pod, role, replicas, pool, fits, reasons}]

Pods: the training job, the NCCL preflight job and, for elastic jobs, the rendezvous store.
Node capacity: the node model of the pool's instance (catalog/node.py: kubelet capacity,
reserves, eviction threshold, the pool's hugepages) less the add-on DaemonSets that run on the
pool (manifests/nodes.py); device counts from the instance (catalog GPUs, the fabric profile's
devices for that instance), offered only where an add-on advertises them. The model errs low,
so a pod that does not fit it "may not fit" the real node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from reclaunch.manifests.nodes import pool_capacity
from reclaunch.manifests.schedule import check, pods_of

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan


def launch_objects(plan: "Plan", launch: Any = None) -> dict[str, list[dict[str, Any]]]:
    """{role: objects} of everything `up` may apply for this plan (`launch`: the plan's
    manifests.launch.Launch when the caller has rendered it already)."""
    from reclaunch.manifests.job import preflight_job, render
    from reclaunch.manifests.rdzv import ROLE as RDZV

    objs = launch.all() if launch is not None else render(plan)
    out: dict[str, list[dict[str, Any]]] = {
        "training": [o for o in objs if o["kind"] == "PyTorchJob"],
        RDZV: [o for o in objs if o["kind"] == "Deployment"],
    }
    if plan.gpus_per_node > 0 and plan.offer is not None:
        out["preflight"] = [preflight_job(plan)]
    return out


def schedule(plan: "Plan", pools: Sequence[Any], addons: Sequence[dict[str, Any]],
             catalog: Any = None, launch: Any = None) -> list[dict[str, Any]]:
    pods = [p for role, objs in launch_objects(plan, launch).items() for p in pods_of(objs, role)]
    capacity = {pool.name: pool_capacity(plan, pool, addons, catalog) for pool in pools}
    return check(pods, pools, addons, capacity)


def for_plan(plan: "Plan", catalog: Any = None, launch: Any = None) -> list[dict[str, Any]]:
    """The check against the plan's own stack (stacks.<cloud>.node_pools and the add-on facts
    of k8s/addons.yaml). A target without a stack has no pools: nothing to check, []."""
    from reclaunch.manifests.stackfacts import addon_facts, node_pools, stack_package

    if stack_package(plan.cloud) is None:
        return []
    return schedule(plan, node_pools(plan), addon_facts(plan), catalog, launch)


def refusal(rows: Sequence[dict[str, Any]]) -> str | None:
    """One line naming the pods that cannot be placed and the first reason of each."""
    bad = [r for r in rows if not r["fits"]]
    if not bad:
        return None
    return "; ".join(f"{r['pod']} ({r['role']}): {(r['reasons'] or ['no pool'])[0]}"
                     for r in bad)
