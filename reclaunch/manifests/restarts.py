"""runPolicy.backoffLimit in the unit the training operator counts.

kubeflow/training-operator pkg/core/job.go PastBackoffLimit (v1.9.0) sums the RestartCount
of every container and init container over every running pod of the job (OnFailure,
Always and ExitCode replicas) and fails the job once the sum reaches backoffLimit. So one
full restart of an N-node job costs N x (containers per pod): with a flat 10, an 8-node job
with a sidecar failed on its first full restart. `job.max_restarts` means whole-job
restarts; the limit is that many restarts of every container of every pod of the largest
the job may grow to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan


def containers_per_pod(template: dict[str, Any]) -> int:
    spec = template.get("spec") or {}
    return max(1, len(spec.get("containers") or []) + len(spec.get("initContainers") or []))


def backoff_limit(plan: "Plan", template: dict[str, Any]) -> int:
    nodes = max(plan.nodes, plan.max_nodes, 1)
    return plan.spec.job.max_restarts * nodes * containers_per_pod(template)
