"""The training job's own identity for checkpoints (and data) in a bucket: pure facts + one helper.

With job.checkpoint.path (or job.dataset.path) a bucket URL, the job pods run as the
Kubernetes ServiceAccount `<name>-trainer`, which the stack binds to a cloud identity allowed
on that bucket and prefix only (stacks/<cloud>/bucket.py): EKS Pod Identity, GKE Workload
Identity, AKS workload identity. No node-wide role gets bucket rights, no key is stored in a
manifest or Secret. The stack creates the ServiceAccount (it carries the cloud identity's id,
known only after `up`); render names it on the pods and adds the pod label the cloud's
webhook needs (AKS). Import-free, like stacks.common's pure part.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any, NamedTuple

from reclaunch.spec.buckets import BucketURL, is_url, parse

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

# AKS: the mutating webhook injects the federated token only into pods with this label
# (learn.microsoft.com/azure/aks/workload-identity-deploy-cluster, "Deploy your application").
POD_LABELS: dict[str, dict[str, str]] = {"azure": {"azure.workload.identity/use": "true"}}
# Unfinished multipart uploads (a writer killed mid-checkpoint) are aborted after a day. Whole
# checkpoints expire only when job.checkpoint.expire_days asks (expire_days below): a run
# paused for longer than any fixed age must still resume, and the trainer itself deletes
# superseded steps (it keeps the newest few).
ABORT_UPLOADS_DAYS = 1


def expire_days(plan: "Plan") -> int | None:
    """Days after which the created bucket deletes a checkpoint object (None: never)."""
    return plan.spec.job.checkpoint.expire_days


class Grant(NamedTuple):
    url: BucketURL
    write: bool        # checkpoints: read, write, delete; datasets: read


def grants(plan: "Plan") -> list[Grant]:
    """The prefixes the job's identity may use ([] = checkpoints are on a file system)."""
    job = plan.spec.job
    out = []
    if is_url(job.checkpoint.path):
        out.append(Grant(parse(job.checkpoint.path), True))
    if is_url(job.dataset.path):
        out.append(Grant(parse(job.dataset.path), False))
    return out


def created(plan: "Plan") -> BucketURL | None:
    """The bucket the stack creates (storage.kind: bucket), else None (the user's own)."""
    g = grants(plan)
    return g[0].url if plan.spec.storage.kind == "bucket" and g and g[0].write else None


def service_account(plan: "Plan") -> str | None:
    return f"{plan.name}-trainer" if grants(plan) else None


def account_name(plan: "Plan", use: str = "") -> str:
    """Azure: the name of a storage account the stack creates: 3-24 lowercase letters/digits,
    globally unique, stable per cluster (a hash of name, region and `use`), so render can hand
    it to the trainer (stacks/azure/bucket.py: checkpoints; storage.py: use "files")."""
    base = re.sub(r"[^a-z0-9]", "", plan.name)[:14]
    seed = "/".join(filter(None, (plan.name, plan.region, use)))
    return f"r{use[:1] or 'l'}{base}{hashlib.sha256(seed.encode()).hexdigest()[:8]}"


def _azure_env(plan: "Plan") -> dict[str, str]:
    # adlfs reads the account from AZURE_STORAGE_ACCOUNT_NAME when the URL names none.
    u = created(plan)
    return {"AZURE_STORAGE_ACCOUNT_NAME": account_name(plan)} if u is not None and not u.account else {}


POD_ENV = {"azure": _azure_env}


def pod_identity(plan: "Plan") -> dict[str, Any]:
    """{service_account, labels, env} the job pods carry ({} without a bucket)."""
    sa = service_account(plan)
    if sa is None or plan.cloud not in ("aws", "azure", "gcp"):
        return {}
    env = POD_ENV[plan.cloud](plan) if plan.cloud in POD_ENV else {}
    return {"service_account": sa, "labels": dict(POD_LABELS.get(plan.cloud, {})), "env": env}


def kube_service_account(k8s: Any, pulumi: Any, plan: "Plan", provider: Any, namespace: Any,
                         annotations: dict | None = None, depends_on: list | None = None):
    """The job's ServiceAccount in the job's Namespace (stacks.common.JobNamespace, shared with
    the data volume). Labels: the cluster's, like everything reclaunch creates."""
    from stacks import common as c

    ns = namespace.get()
    return k8s.core.v1.ServiceAccount(c.name(plan, "trainer-sa"), metadata={
        "name": service_account(plan), "namespace": plan.spec.namespace,
        "labels": c.labels(plan), "annotations": annotations or {}},
        automount_service_account_token=True,
        opts=pulumi.ResourceOptions(provider=provider, depends_on=[ns, *(depends_on or [])]))
