"""AKS: the GA minors of a region with community (KubernetesOfficial) support, from the
List Kubernetes Versions API through `az aks get-versions --location R -o json` (the az CLI
is already a prerequisite: kubelogin takes its token). A minor offered only under
AKSLongTermSupport needs the Premium tier, and a preview one no SLA: neither is chosen."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan


def parse(doc: dict[str, Any]) -> list[str]:
    """The body of learn.microsoft.com/rest/api/aks/managed-clusters/list-kubernetes-versions."""
    return [v["version"] for v in doc.get("values", [])
            if not v.get("isPreview")
            and "KubernetesOfficial" in ((v.get("capabilities") or {}).get("supportPlan") or [])]


def offered(plan: "Plan", run: Callable[..., Any] | None = None) -> list[str]:
    import subprocess

    out = (run or subprocess.run)(["az", "aks", "get-versions", "--location", plan.region,
                                   "-o", "json"], capture_output=True, text=True, timeout=60,
                                  check=True)
    return parse(json.loads(out.stdout))
