"""A spot job that can only wait for spot: recreate it on the on-demand pool (issue 24).

Where the spot and the on-demand GPU pools are different RDMA fabrics (AKS: every VM scale
set is its own InfiniBand fabric, so the stack gives each pool its own value of
stacks.common.FABRIC_GROUP_LABEL and a multi-node job is pinned to one value), a reclaimed
spot node's replacement can only come from the spot pool: the job's other pods hold it there.
When spot capacity does not come back, the job would wait forever while the cluster bills.

So the watcher counts how long a pod of such a job has been Pending. Past
`2 x spot.restart_minutes` (the time the plan allows a replacement, twice) it deletes the
job and applies the on-demand launch instead (lifecycle.variant(plan, spot=False): Master +
Worker, no spot toleration, so every pod lands on the on-demand pool, one fabric), which
resumes from the last checkpoint like any restart. The record is re-priced on-demand, so
spend, the budget guard and status follow. Nothing here names a cloud: the condition is read
from the stack's own pools.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan
    from reclaunch.runtime.journal import ClusterRecord, Journal

WAIT_FACTOR = 2.0          # x spot.restart_minutes before giving up on spot
DELETE_POLLS = 60          # polls (env.poll_seconds each) for the old job to go


def pools_split_the_fabric(plan: "Plan") -> bool:
    """True when a spot job's spot and on-demand GPU pools are different fabric groups."""
    from reclaunch.manifests.job import multi_node
    from reclaunch.manifests.stackfacts import node_pools
    from stacks.common import FABRIC_GROUP_LABEL

    if not plan.spot or plan.spec.spot.fallback != "on-demand" or not multi_node(plan):
        return False
    groups = {p.spot: p.labels.get(FABRIC_GROUP_LABEL) for p in node_pools(plan) if p.role == "gpu"}
    return True in groups and False in groups and groups[True] != groups[False]


def wait_seconds(plan: "Plan") -> float:
    return WAIT_FACTOR * float(plan.spec.spot.restart_minutes) * 60.0


class SpotWatch:
    """Per watch loop: when did a pod of the job start waiting, and is it time to move."""

    def __init__(self, rec: "ClusterRecord"):
        from reclaunch.runtime.observe import plan_for

        self.plan = plan_for(rec.name) if rec.spot else None
        self.armed = self.plan is not None and pools_split_the_fabric(self.plan)
        self.pending_since: float | None = None

    def due(self, pods: list[dict[str, Any]], now: float) -> bool:
        if not self.armed:
            return False
        if not any(p.get("phase") == "Pending" for p in pods):
            self.pending_since = None
            return False
        self.pending_since = self.pending_since or now
        return now - self.pending_since >= wait_seconds(self.plan)


def move_to_on_demand(rec: "ClusterRecord", env: Any, kube: Any, journal: "Journal",
                      od: "Plan") -> "ClusterRecord":
    """Delete the spot job, wait for it to go, apply the launch of `od` (the plan re-made
    on-demand: lifecycle.variant); the new record. `env`: lifecycle.Env (sleep, poll_seconds)."""
    import dataclasses

    from reclaunch.manifests.launch import build_launch
    from reclaunch.runtime.budget import usd_per_hour
    from reclaunch.tags import PYTORCHJOB_API

    launch = build_launch(od)
    waited = wait_seconds(od) / 60
    journal.write("spot-fallback", "start", message=(
        f"a pod waited {waited:g} min for spot capacity, and the spot and on-demand pools are "
        "different fabrics: recreating the job on the on-demand pool from its last checkpoint"))
    kube.delete(PYTORCHJOB_API, rec.job_kind, rec.job_name, rec.namespace)
    for _ in range(DELETE_POLLS):
        if kube.job(rec.namespace, rec.job_name, kind=rec.job_kind) is None:
            break
        env.sleep(env.poll_seconds)
    kube.apply_all([o for o in launch.objects if o is not launch.job])
    kube.apply(launch.job)
    new = dataclasses.replace(rec, spot=False, usd_per_hour=usd_per_hour(od))
    journal.save_record(new)
    journal.write("spot-fallback", "ok", message="job recreated on the on-demand pool",
                  usd_per_hour=new.usd_per_hour)
    return new
