"""What the manifests take from the stacks' pure data (stacks.StackFacts and stacks.common).

`stacks.<cloud>` implements `stacks.StackFacts` (node_pools, job_placement,
manual_prerequisites) and `stacks.common` holds the add-on facts and the pinned GPUDirect row
of k8s/addons.yaml. None of it imports Pulumi. Reading them here keeps the pods we render and
the pools the stack creates one datum: the labels a pod selects, the taints it tolerates and
the daemon image paired with the node's plugin installer all come from the same place the
stack builds from. A target without a stack package (cloud: local) has none of these facts;
a stack package that lacks one is a StackContractError, never an empty answer.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

import stacks

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.fabric import FabricProfile
    from reclaunch.planner.model import Plan


def stack_package(cloud: str) -> ModuleType | None:
    """`stacks.<cloud>` checked against StackFacts, or None for a target without a stack."""
    return stacks.facts(cloud)


def job_placement(plan: "Plan") -> dict[str, Any]:
    """{node_selector, tolerations} a job pod adds on this cloud to reach the GPU pools. An
    offer of existing nodes (cloud: kubernetes) places itself: its node group's labels and
    the spec's tolerations, with `own_nodes` set (no stack labels its nodes for us)."""
    own = getattr(plan.offer, "placement", None)
    if callable(own):
        return own(plan)
    return stacks.job_placement(plan)


def pod_identity(plan: "Plan") -> dict[str, Any]:
    """{service_account, labels, env} of the job's workload identity for bucket checkpoints."""
    from stacks.identity import pod_identity as facts

    return facts(plan)


def bucket_auth_note(plan: "Plan") -> str | None:
    """How the pods reach a bucket checkpoint or dataset where no stack binds their identity
    (a cluster you bring): said, since nothing there is created for it."""
    from stacks.identity import grants

    from reclaunch import clouds

    urls = ", ".join(g.url.url for g in grants(plan))
    if not urls or clouds.get(plan.cloud).kind != "own" or pod_identity(plan):
        return None
    sa = plan.spec.kubernetes.service_account if plan.spec.kubernetes else None
    if sa:
        return (f"{urls}: the pods run as ServiceAccount {sa} (kubernetes.service_account); "
                "reclaunch creates no identity on a cluster you bring: bind it to one with "
                "rights on that prefix (EKS Pod Identity or IRSA, GKE or AKS workload identity)")
    return (f"{urls}: the pods run as the namespace's default ServiceAccount and reach it only "
            "with what the node or the image provides; set kubernetes.service_account to a "
            "ServiceAccount bound to an identity with rights on that prefix")


def node_pools(plan: "Plan") -> list[Any]:
    return stacks.node_pools(plan)


def addon_facts(plan: "Plan") -> list[dict[str, Any]]:
    if stacks.facts(plan.cloud) is None:
        return []
    from stacks import common

    return common.addon_facts(plan)


def fabric_group_label(plan: "Plan") -> str | None:
    """The node label naming the RDMA fabric a GPU node of this plan's stack is on."""
    if stacks.facts(plan.cloud) is None:
        return None
    from stacks import common

    return common.FABRIC_GROUP_LABEL


def rxdm_image(profile: "FabricProfile") -> str | None:
    """The tcpxo-daemon image of the pinned `gpudirect.tcpxo` row, when `profile` runs it."""
    from reclaunch.fabric import tcpxo

    if not any(c.get("image") == tcpxo.RXDM_IMAGE for c in profile.init_containers):
        return None
    from stacks import common

    return common.gpudirect_release("tcpxo")["rxdm_image"]
