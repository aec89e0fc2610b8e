"""What the AKS job pods carry for the workload identity on the checkpoint bucket (pure)."""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any

from stacks.identity import created

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

# The mutating webhook injects the federated token only into pods with this label
# (learn.microsoft.com/azure/aks/workload-identity-deploy-cluster, "Deploy your application").
POD_LABELS = {"azure.workload.identity/use": "true"}


def account_name(plan: "Plan", use: str = "") -> str:
    """The name of a storage account the stack creates: 3-24 lowercase letters/digits,
    globally unique, stable per cluster (a hash of name, region and `use`), so render can hand
    it to the trainer (stacks/azure/bucket.py: checkpoints; storage.py: use "files")."""
    base = re.sub(r"[^a-z0-9]", "", plan.name)[:14]
    seed = "/".join(filter(None, (plan.name, plan.region, use)))
    return f"r{use[:1] or 'l'}{base}{hashlib.sha256(seed.encode()).hexdigest()[:8]}"


def pod_identity(plan: "Plan") -> dict[str, Any]:
    """stacks.StackFacts.pod_identity: the webhook's label, and the created account's name
    (adlfs reads AZURE_STORAGE_ACCOUNT_NAME when the URL names none)."""
    u = created(plan)
    env = {"AZURE_STORAGE_ACCOUNT_NAME": account_name(plan)} if u is not None and not u.account else {}
    return {"labels": dict(POD_LABELS), "env": env}
