"""The training job's own identity for checkpoints (and data) in a bucket: pure facts + one helper.

With job.checkpoint.path (or job.dataset.path) a bucket URL, the job pods run as the
Kubernetes ServiceAccount `<name>-trainer`, which the stack binds to a cloud identity allowed
on that bucket and prefix only (stacks/<cloud>/bucket.py): EKS Pod Identity, GKE Workload
Identity, AKS workload identity. No node-wide role gets bucket rights, no key is stored in a
manifest or Secret. The stack creates the ServiceAccount (it carries the cloud identity's id,
known only after `up`); render names it on the pods and adds what the cloud's stack declares
the pods need besides (`pod_identity` of stacks.StackFacts: AKS's webhook label, say).
Import-free, like stacks.common's pure part.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from reclaunch.spec.buckets import BucketURL, is_url, parse

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

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


def pod_identity(plan: "Plan") -> dict[str, Any]:
    """{service_account, labels, env} the job pods carry ({} without a bucket, or on a target
    without a stack: local processes and a cluster you bring use their own identity). The
    labels and env are the cloud's stack's (stacks.StackFacts.pod_identity): a stack that
    declares none fails loudly (StackContractError), it never renders pods without them."""
    import stacks

    sa = service_account(plan)
    pkg = stacks.facts(plan.cloud) if sa is not None else None
    if pkg is None:
        return {}
    extra = pkg.pod_identity(plan)
    return {"service_account": sa, "labels": dict(extra.get("labels") or {}),
            "env": dict(extra.get("env") or {})}


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
