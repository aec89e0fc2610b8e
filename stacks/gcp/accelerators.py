"""The GKE accelerator type of a GPU machine (the `cloud.google.com/gke-accelerator` label and
the node pool's guest accelerator). Its own module (stacks.gcp.pools re-exports it) so the
"what needs a person" list of `plan` names the GPU quota without importing stacks.common."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

ACCELERATOR = {  # instance prefix -> GKE accelerator type
    "a3-megagpu": "nvidia-h100-mega-80gb", "a3-highgpu": "nvidia-h100-80gb",
    "a3-ultragpu": "nvidia-h200-141gb", "a2-ultragpu": "nvidia-a100-80gb",
    "a2-highgpu": "nvidia-tesla-a100", "g2-standard": "nvidia-l4",
}


def accelerator(plan: "Plan") -> str:
    prefix = "-".join((plan.instance_type or "").split("-")[:2])
    return ACCELERATOR.get(prefix, "nvidia-" + (plan.gpu or "gpu").lower())
