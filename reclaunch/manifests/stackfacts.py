"""What the manifests take from the stacks' pure data (CONTRACTS.md contract 3).

`stacks.<cloud>` exposes `node_pools(plan)` and `job_placement(plan)`, and `stacks.common`
the add-on facts and the pinned GPUDirect row of k8s/addons.yaml. None of it imports Pulumi.
Reading them here keeps the pods we render and the pools the stack creates one datum: the
labels a pod selects, the taints it tolerates and the daemon image paired with the node's
plugin installer all come from the same place the stack builds from. A target without a
stack package (cloud: local) has none of these facts.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.fabric import FabricProfile
    from reclaunch.planner.model import Plan


def stack_package(cloud: str) -> ModuleType | None:
    """`stacks.<cloud>` (contract 3 names it so), or None for a target without a stack."""
    name = f"stacks.{cloud}"
    try:
        if importlib.util.find_spec(name) is None:
            return None
    except ModuleNotFoundError:
        return None
    return importlib.import_module(name)


def job_placement(plan: "Plan") -> dict[str, Any]:
    """{node_selector, tolerations} a job pod adds on this cloud to reach the GPU pools."""
    pkg = stack_package(plan.cloud)
    place = getattr(pkg, "job_placement", None)
    out = place(plan) if place else {}
    return {"node_selector": dict(out.get("node_selector") or {}),
            "tolerations": [dict(t) for t in out.get("tolerations") or ()]}


def node_pools(plan: "Plan") -> list[Any]:
    pkg = stack_package(plan.cloud)
    if pkg is None or not hasattr(pkg, "node_pools"):
        return []
    return list(pkg.node_pools(plan))


def addon_facts(plan: "Plan") -> list[dict[str, Any]]:
    if stack_package(plan.cloud) is None:
        return []
    from stacks import common

    facts = getattr(common, "addon_facts", None)   # absent: the stack states no facts
    return facts(plan) if facts else []


def fabric_group_label(plan: "Plan") -> str | None:
    """The node label naming the RDMA fabric a GPU node of this plan's stack is on."""
    if stack_package(plan.cloud) is None:
        return None
    from stacks import common

    return getattr(common, "FABRIC_GROUP_LABEL", None)


def rxdm_image(profile: "FabricProfile") -> str | None:
    """The tcpxo-daemon image of the pinned `gpudirect.tcpxo` row, when `profile` runs it."""
    from reclaunch.fabric import tcpxo

    if not any(c.get("image") == tcpxo.RXDM_IMAGE for c in profile.init_containers):
        return None
    from stacks import common

    return common.gpudirect_release("tcpxo")["rxdm_image"]
