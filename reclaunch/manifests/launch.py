"""The launch: what `up` applies, as one value (TorchX's dryrun object that `schedule` submits).

Built once, from the plan that was actually provisioned (after any capacity fallback: a job on
on-demand nodes must not keep spot's elastic policy, and its deadline must be priced at the
rate really paid). `up --dry-run` prints exactly this value for the plan as planned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reclaunch.tags import PYTORCHJOB_API

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

JOB_KINDS = ("PyTorchJob",)


@dataclass(frozen=True)
class Launch:
    plan: "Plan"
    objects: tuple[dict[str, Any], ...]     # everything but the job, in apply order
    job: dict[str, Any] | None              # applied last, after the optional preflight

    @property
    def job_ref(self) -> tuple[str, str, str, str]:
        """(apiVersion, kind, name, namespace) of the training job."""
        md = (self.job or {}).get("metadata") or {}
        return ((self.job or {}).get("apiVersion", PYTORCHJOB_API),
                (self.job or {}).get("kind", JOB_KINDS[0]),
                md.get("name") or self.plan.name, md.get("namespace") or self.plan.spec.namespace)

    def all(self) -> list[dict[str, Any]]:
        return [*self.objects, *([self.job] if self.job else [])]

    def to_yaml(self) -> str:
        from reclaunch.manifests.job import to_yaml
        return to_yaml(self.all())


def build_launch(plan: "Plan") -> Launch:
    from reclaunch.manifests.job import render

    return launch_of(plan, render(plan))


def launch_of(plan: "Plan", objs: list[dict[str, Any]]) -> Launch:
    """The Launch of objects manifests.job.render(plan) returned."""
    jobs = [m for m in objs if m.get("kind") in JOB_KINDS]
    return Launch(plan=plan, objects=tuple(m for m in objs if m.get("kind") not in JOB_KINDS),
                  job=jobs[-1] if jobs else None)
