"""The `kubernetes:` block of cluster.yaml: a cluster the team already has (cloud: kubernetes).

Pure and offline. What the block names (a kubeconfig context, a namespace, the price the team
pays) is checked here; what the cluster has (nodes, GPUs, fabric, the training operator) is
read from its API at plan time by reclaunch/providers/kubernetes, never here.
"""

from typing import Annotated, Any, Literal

from pydantic.fields import Field
from pydantic.functional_validators import BeforeValidator
from pydantic.main import BaseModel

from reclaunch.spec.config import NESTED, no_bool

Problem = tuple[tuple[str | int, ...], str]


class Price(BaseModel):
    model_config = NESTED
    usd_per_gpu_hour: Annotated[float, BeforeValidator(no_bool)] = Field(
        ge=0, le=1_000, description="What a GPU-hour on this cluster costs you; 0 = already paid for")


class Toleration(BaseModel):
    """A v1.Toleration the job pods add (to run on nodes the cluster taints, e.g. dedicated=ml)."""

    model_config = NESTED
    key: str | None = Field(None, max_length=316, description="The taint's key; none with Exists: every taint")
    operator: Literal["Equal", "Exists"] = Field("Equal", description="Equal: key and value match; Exists: the key")
    value: str | None = Field(None, max_length=63, description="The taint's value (operator Equal)")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(
        None, description="The taint's effect; none: every effect")


class KubernetesTarget(BaseModel):
    model_config = NESTED
    context: str | None = Field(None, min_length=1, max_length=253, description=(
        "kubeconfig context (default: the current one; KUBECONFIG is honoured)"))
    namespace: str | None = Field(None, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63,
                                  description="Namespace the job is applied to (default: spec namespace)")
    price: Price | None = Field(None, description=(
        "Default: the catalog's on-demand price of the node's instance type, where it has one"))
    tolerations: list[Toleration] = Field([], max_length=64, description=(
        "Taints of the cluster's nodes the job pods tolerate (e.g. dedicated=ml-team:NoSchedule)"))
    node_selector: dict[Annotated[str, Field(min_length=1, max_length=316)],
                        Annotated[str, Field(max_length=63)]] = Field({}, max_length=64, description=(
        "Node labels the job pods also require, beside their node group's"))
    nodes: str | None = Field(None, min_length=1, max_length=1024, description=(
        "A file `reclaunch nodes save` wrote (relative to this file): plan, render and check "
        "read the nodes from it, with no kubeconfig needed; `up` always reads the cluster"))
    service_account: str | None = Field(
        None, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length=253, description=(
            "The ServiceAccount the job pods run as: bind it to an identity with rights on a "
            "bucket checkpoint prefix (EKS Pod Identity / IRSA, GKE or AKS workload identity); "
            "default: the namespace's default ServiceAccount"))


def rules(s: Any) -> list[Problem]:   # s: spec.models.Spec (which imports this module)
    """cloud: kubernetes: what the spec alone can tell (the cluster is checked at plan time)."""
    out: list[Problem] = []
    for field in ("region", "zones", "autoscaling", "capacity"):
        if getattr(s, field):
            out.append(((field,), f"cloud: kubernetes runs on the nodes the cluster already "
                        f"has and takes no {field}; remove it"))
    if s.spot.enabled:
        out.append((("spot", "enabled"), "cloud: kubernetes places the job on the cluster's "
                    "nodes as they are (spot or not); set spot.enabled: false"))
    if not s.job.image:
        out.append((("job", "image"), "required for cloud: kubernetes: the training image to pull"))
    ns = s.kubernetes.namespace if s.kubernetes else None
    if ns and (ns.startswith("kube-") or ns == "default"):
        out.append((("kubernetes", "namespace"), f"{ns!r} is a system namespace; the job gets "
                    "its own (down deletes what up applied there)"))
    return out
