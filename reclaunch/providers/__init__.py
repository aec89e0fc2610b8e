"""Targets: everything above picks by `get(cloud)`; no module here lists cloud names.

A provider module implements `Provider` (providers/api.py). Cloud providers share the
Kubernetes path (Pulumi stack + PyTorchJob) from `reclaunch.runtime.lifecycle`; `local` runs
torchrun on this machine.
Each module is imported lazily so one cloud's SDK never loads for another.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from reclaunch import clouds
from reclaunch.errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan
    from reclaunch.providers.api import Provider

# The Provider API (providers/api.py: the protocols; UpOptions, JobStatus), importable from
# here as before but loaded on first use: `plan` imports this package for planning_catalog
# and needs none of them (dataclass, enum and protocol classes it would build at start-up).
_API = {"Provider": "reclaunch.providers.api", "ListsClusters": "reclaunch.providers.api",
        "Adoptable": "reclaunch.providers.api", "Preemptible": "reclaunch.providers.api",
        "Shell": "reclaunch.providers.api",
        "UpOptions": "reclaunch.providers.options", "JobStatus": "reclaunch.runtime.states"}


# Read live from the registry (never at import: importing a cloud's facts module runs this
# package's __init__, which must not ask the registry that is loading it).
_LISTS = {
    # Clouds with a stack, prices and a sweeper (the CLI's --cloud choices read the registry
    # through cli.base.CloudChoice). What the provider does is declared in its CloudSpec.
    "KUBE_CLOUDS": clouds.kube_names,
    # Clusters you bring (their region is a kube context).
    "OWN_CLUSTERS": clouds.own_names,
    # Targets `gc` can sweep: both.
    "SWEPT_CLOUDS": lambda: clouds.kube_names() + clouds.own_names(),
}


def __getattr__(name: str) -> Any:
    if name in _API:
        return getattr(importlib.import_module(_API[name]), name)
    if name in _LISTS:
        return _LISTS[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# The targets, from the one registry (reclaunch/clouds.py; each cloud's facts are its
# package's facts.py): {cloud: (provider module, kind)}, kind "kube" (a Pulumi stack +
# PyTorchJob), "own" (a cluster the team already has: its nodes are the offers, no stack) or
# "here". Read live, so a registered cloud is known.
REGISTRY = clouds.PerCloud(lambda f: (f.provider, f.kind))


def _package(cloud: str, kinds: tuple[str, ...] = ("kube", "own", "here")):
    try:
        module, kind = REGISTRY[cloud]
    except KeyError:
        raise UsageError(f"unknown cloud {cloud!r}; known: {', '.join(REGISTRY)}") from None
    if kind not in kinds:
        known = [c for c, (_, k) in REGISTRY.items() if k in kinds]
        raise UsageError(f"cloud {cloud!r} has no cloud resources for this",
                         hint=f"one of: {', '.join(known)}")
    return importlib.import_module(module)


def get(cloud: str) -> Provider:
    return _package(cloud, ("kube", "own", "here")).provider()


def planning_catalog(spec, catalog, live: bool = False):
    """The catalog `plan` plans `spec` on: `catalog` itself, or for a cluster you bring the
    offers its nodes make (read through its API by the provider package; the planner stays
    pure; `live`: never from a saved description, as `up` needs)."""
    if REGISTRY.get(spec.cloud, ("", ""))[1] != "own":
        return catalog
    return _package(spec.cloud, ("own",)).planning_catalog(spec, catalog, live=live)


def save_nodes(context: str | None, out: str | None) -> tuple[str, dict[str, Any]]:
    """`reclaunch nodes save`: a cluster you bring, its nodes as a file `plan` reads without
    the cluster (the provider of the target of kind "own"). -> (context, what was saved)."""
    own = clouds.own_names()
    if not own:
        raise UsageError("no registered target is a cluster you bring")
    return _package(own[0], ("own",)).save_nodes(context, out)


def schedule_for(plan: "Plan", catalog=None) -> list[dict[str, Any]]:
    """Every pod of the launch and where it lands: the stack's pools, or a cluster's own nodes."""
    if REGISTRY.get(plan.cloud, ("", ""))[1] == "own":
        return _package(plan.cloud, ("own",)).schedule(plan)
    from reclaunch.manifests.placement import for_plan
    return for_plan(plan, catalog)


def cloud_spec(cloud: str):
    """The `CloudSpec` of a Kubernetes target (its provider module, providers/<cloud>/provider.py):
    a cloud with a stack, or a cluster you bring."""
    return _package(cloud, ("kube", "own")).CLOUD


def _load(target: str):
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def price_fetcher(cloud: str):
    """The cloud's `fetch_prices(rows)` (catalog refresh); imports its SDK only when called."""
    return _load(cloud_spec(cloud).prices)


class _Fetchers(dict):
    """{cloud: fetcher} for catalog refresh, each loaded on first use (SDKs stay unimported)."""

    def __init__(self) -> None:
        super().__init__()

    def __contains__(self, cloud: object) -> bool:
        return cloud in clouds.kube_names()

    def get(self, cloud, default=None):  # type: ignore[override]
        return price_fetcher(cloud) if cloud in clouds.kube_names() else default

    def __getitem__(self, cloud):
        return price_fetcher(cloud)

    def keys(self):  # type: ignore[override]
        return list(clouds.kube_names())


def price_fetchers() -> dict:
    return _Fetchers()


def sweeper_for(cloud: str, region: str, **options: Any):
    """The cloud's tag sweeper (gc, teardown verification) for one region."""
    import re

    if cloud in clouds.own_names():   # a cluster you bring: `region` is the kubeconfig context
        return _package(cloud, ("own",)).sweeper(region, **options)

    # Region names are [a-z0-9-] on every cloud ("East US" is Azure's display name of eastus).
    # Anything else would reach the SDKs as a malformed endpoint host.
    norm = (region or "").strip().lower()   # "a b" is no region, not "ab"
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,63}", norm):
        raise UsageError(f"gc: {region!r} is not a region name",
                         hint="e.g. us-east-1, eastus, us-central1")
    return _load(cloud_spec(cloud).sweeper)(region=norm, **options)


def gc(cloud: str, region: str, cluster: str | None = None, *, delete: bool = False,
       sleep=None, progress=None, **options: Any):
    """`reclaunch gc`: the cloud's sweeper over one region. Returns a runtime.sweep.SweepReport."""
    import time

    from reclaunch.runtime.sweep import sweep
    return sweep(sweeper_for(cloud, region, **options), cluster, delete=delete,
                 sleep=sleep or time.sleep, progress=progress)


def stack_program(cloud: str):
    """`program(plan)` of the cloud's Pulumi stack (stacks/<cloud>/program.py)."""
    return _load(cloud_spec(cloud).program)


def preview_plan(plan: "Plan") -> list[dict[str, Any]]:
    """`reclaunch preview`: the cloud's stack program under Pulumi mocks."""
    from reclaunch.runtime.preview import preview
    if REGISTRY.get(plan.cloud, ("", ""))[1] == "own":
        return []   # a cluster you bring: nothing is created but the launch (schedule_for)
    if REGISTRY.get(plan.cloud, ("", ""))[1] != "kube":
        raise UsageError(f"cloud: {plan.cloud} creates no cloud resources, so there is nothing "
                         f"to preview", hint=f"preview works for {', '.join(clouds.kube_names())}; "
                         "`reclaunch plan` and `reclaunch render` work for every cloud")
    return preview(plan, program=stack_program(plan.cloud), extra=clouds.get(plan.cloud).pip_extra)

