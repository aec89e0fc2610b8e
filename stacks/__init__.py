"""Pulumi programs, one package per cloud, each exposing `program(plan)`.

Which program belongs to which cloud is declared once, in that cloud's CloudSpec
(reclaunch/providers/<cloud>/provider.py). A built-in cloud with a stack (facts kind "kube")
has it here, as `stacks.<cloud>`; a cloud from outside names its own in its facts (`stack`).
Importing this package imports no Pulumi SDK.

Besides its program, every `stacks.<cloud>` package implements `StackFacts`: the pure facts
the launch reads from the stack (its node pools, where a job pod must go, what needs a
person before `up`, what a pod carries for the bucket identity, its policy rules). The manifests read them through `facts(cloud)`, which refuses a package
that lacks one, so a renamed function fails loudly instead of making a check find no pools.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan


@runtime_checkable
class StackFacts(Protocol):
    """What `stacks.<cloud>` exports besides its Pulumi program (no Pulumi import)."""

    def node_pools(self, plan: "Plan") -> list[Any]:
        """The cluster's node pools (stacks.common.Pool), as the program creates them."""

    def job_placement(self, plan: "Plan") -> dict[str, Any]:
        """{node_selector, tolerations} a job pod adds to reach this cloud's GPU pools."""

    def manual_prerequisites(self, plan: "Plan") -> list[str]:
        """What a person must do before `up` (quotas, registrations, reservations to buy)."""

    def pod_identity(self, plan: "Plan") -> dict[str, Any]:
        """{labels, env} a job pod adds to use the bucket identity the stack creates
        (stacks/identity.py: the ServiceAccount is common; what else the cloud needs is here)."""

    def policy_rules(self) -> dict[str, Any]:
        """{policy: rule(plan, resources) -> findings} for every policy of
        stacks.policy.DECLARED (and any of the stack's own), over what its program creates."""

    def api_refusals(self, typ: str, name: str, inputs: dict[str, Any]) -> list[str]:
        """What the cloud's API would refuse in a resource of its SDK's types that the SDK and
        Pulumi's mocks let through (names, values, combinations; stacks/refusals.py):
        `preview` adds them to the resource's `engine` findings."""

    def kubernetes_minors(self) -> dict[str, Any]:
        """The dated table of Kubernetes minors the cloud creates clusters with, {as_of, source,
        minors: [{minor, end}]} (`end`: its standard support's end): what `preview` shows and
        `up` falls back to when it cannot ask the cloud (stacks/versions.py)."""


FACTS = tuple(n for n in vars(StackFacts) if not n.startswith("_") and callable(vars(StackFacts)[n]))


class StackContractError(TypeError):
    """A stack package that does not implement StackFacts: a bug in the repo, not in input."""


def package_name(cloud: str) -> str | None:
    """The cloud's stack package: its facts' `stack`, else stacks.<cloud> for a built-in cloud
    with a stack (kind "kube"); None for a target with no stack (local, a cluster you bring)."""
    from reclaunch import clouds

    if not clouds.known(cloud):
        return None
    f = clouds.get(cloud)
    return f.stack or (f"{__name__}.{cloud}" if f.kind == "kube" else None)


def facts(cloud: str) -> ModuleType | None:
    """The cloud's stack package checked against StackFacts; None for a target with no stack."""
    name = package_name(cloud)
    if name is None:
        return None
    pkg = importlib.import_module(name)
    if not isinstance(pkg, StackFacts):
        missing = [n for n in FACTS if not callable(getattr(pkg, n, None))]
        raise StackContractError(f"{name} does not implement stacks.StackFacts: "
                                 f"missing {', '.join(missing)}")
    return pkg


def node_pools(plan) -> list:
    """The cluster's node pools ([] for targets with no stack, e.g. local)."""
    pkg = facts(plan.cloud)
    return list(pkg.node_pools(plan)) if pkg else []


def manual_prerequisites(plan) -> list[str]:
    """What a person must do before `up` on this cloud (quotas, feature registrations,
    reservations bought); `up` prints these before it creates anything."""
    pkg = facts(plan.cloud)
    return pkg.manual_prerequisites(plan) if pkg else []


def job_placement(plan) -> dict:
    """Extra nodeSelector/tolerations a job pod needs on this cloud's GPU pools."""
    pkg = facts(plan.cloud)
    out = pkg.job_placement(plan) if pkg else {}
    return {"node_selector": dict(out.get("node_selector") or {}),
            "tolerations": [dict(t) for t in out.get("tolerations") or ()]}
