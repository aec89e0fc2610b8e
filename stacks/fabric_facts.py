"""What a stack reads of the plan's fabric. Its own module (stacks.common re-exports it) so the
"what needs a person" list of `plan` reads it without importing stacks.common.

`fabric_profile(plan)` is the one answer to "what does a node of this job carry": the pods the
render builds (manifests/job.py: devices, hugepages, sidecars) and the pools the stack makes
(stacks/aws/pools.py: the hugepages a node pre-allocates) both read it, so a job that never
leaves one node gets neither the network's devices nor its hugepages, on either side."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan


def fabric_kind(plan: "Plan") -> str:
    """efa | infiniband | tcpx | tcpxo | rdma | ethernet, from the plan's fabric profile."""
    from reclaunch.fabric import get_profile

    return get_profile(plan.fabric).fabric


def fabric_facts(plan: "Plan"):
    """What the stack needs to know of the plan's fabric (reclaunch/clouds.py FabricFacts:
    the NIC type nodes attach, per-pool fabric groups, network MTU, prerequisites)."""
    from reclaunch import clouds

    return clouds.fabric(fabric_kind(plan))


def multi_node(plan: "Plan") -> bool:
    """Can the job ever span nodes? (An elastic job may grow to max_nodes.)"""
    return max(plan.nodes, plan.max_nodes or 0) > 1


def fabric_profile(plan: "Plan"):
    """The plan's fabric profile; a job that never leaves one node gets none of the network's
    devices, hugepages or sidecars (fabric.single_node): they could only block scheduling."""
    from types import SimpleNamespace

    from reclaunch.fabric import get_profile, profile_for, single_node

    if plan.instance_type:
        # The plan's own offer is the catalog row: its fabric beats the family's (a g5.2xlarge
        # has no EFA although g5.8xlarge and up do; the family prefix alone would ask for it).
        row = SimpleNamespace(instance=lambda cloud, it: plan.offer if plan.offer is not None
                              and plan.offer.instance_type == it else None)
        prof = profile_for(plan.cloud, plan.instance_type, plan.spec.interconnect.inter_node, row)
    else:
        prof = get_profile(plan.fabric)
    # Existing GKE nodes (cloud: kubernetes) are attached to the cluster's own Networks.
    own = getattr(plan.offer, "gke_interfaces", ())
    if own and prof.gke_interfaces:
        prof = prof._replace(gke_interfaces=tuple(own))
    return prof if multi_node(plan) else single_node(prof)
