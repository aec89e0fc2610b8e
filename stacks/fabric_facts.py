"""What a stack reads of the plan's fabric. Its own module (stacks.common re-exports it) so the
"what needs a person" list of `plan` reads it without importing stacks.common."""

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
