"""cloud: kubernetes — a cluster the team already has (EKS, GKE, AKS or on-prem).

No Pulumi, no cloud SDK: the official `kubernetes` client (extra `k8s`) and the kubeconfig.

    plan     the nodes (nodes.py) -> one offer per node group (offers.py) -> the planner
    preview  the launch's pods against those nodes (fit.py); nothing is created
    up       training operator present? -> the same check -> apply the launch to the
             namespace (infra.py records what) -> start -> watch -> teardown.when
    down     deletes what `up` applied (the namespace only if `up` created it)
    gc       sweep.py: our labelled objects in every namespace

Everything after "apply" is the shared Kubernetes path (runtime/lifecycle.py), as on the
clouds; this package only swaps the provisioning engine for OwnClusterInfra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from reclaunch.errors import ProviderError
from reclaunch.providers.kubecloud import Answer, CloudSpec, KubeCloudProvider

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.catalog import Catalog
    from reclaunch.planner.model import Plan
    from reclaunch.runtime.journal import ClusterRecord

NAME = "kubernetes"


def credentials() -> Answer:
    """The kubeconfig is the credential (its tokens and exec plugins are its own)."""
    from reclaunch.providers.kubernetes.connect import (KUBECONFIG_FIX, kubeconfig_missing,
                                                        kubeconfig_path)

    if kubeconfig_missing():
        return Answer(False, f"no kubeconfig at {kubeconfig_path()}", KUBECONFIG_FIX)
    return Answer(True, f"kubeconfig {kubeconfig_path()}")


def operator(plan: "Plan") -> Answer:
    """`check FILE`: is the training operator installed in the plan's cluster."""
    from reclaunch.providers.kubernetes.connect import CRD, OPERATOR_FIX, operator_problem

    try:
        problem = operator_problem(_connect(plan.region))
    except ProviderError as exc:
        return Answer(False, f"cannot reach {plan.region}: {exc}", exc.hint)
    return Answer(problem is None, problem or f"{CRD} v1 is served in {plan.region}",
                  OPERATOR_FIX if problem else None)


CLOUD = CloudSpec(name=NAME, program="", sweeper="reclaunch.providers.kubernetes.sweep:KubernetesSweeper",
                  prices="", credentials=credentials, errors=[], quota_fix="", capacity_fix="",
                  readiness=("training operator", operator))


def _connect(context: str | None):
    from reclaunch.providers.kubernetes.connect import connect
    return connect(context)


def planning_catalog(spec, catalog: "Catalog", *, connect: Callable | None = None,
                     live: bool = False) -> "Catalog":
    """The cluster's node groups as the catalog `plan` plans on (the API is read here, so the
    planner stays pure). From a saved description (saved.py) when the spec names one
    (kubernetes.nodes) or when there is no kubeconfig and one was saved for its context;
    `live` (`up`): the cluster itself, always."""
    from pathlib import Path

    from reclaunch.providers.kubernetes import saved
    from reclaunch.providers.kubernetes.connect import context_name, kubeconfig_missing
    from reclaunch.runtime.kube_nodes import read_nodes
    from reclaunch.providers.kubernetes.offers import cluster_catalog
    k = spec.kubernetes
    named = k.context if k else None
    path = None
    if k and k.nodes and not live:
        path = Path(getattr(spec, "_source", ".")).resolve().parent / Path(k.nodes).expanduser()
    elif not live and named and kubeconfig_missing() and saved.default_path(named).is_file():
        path = saved.default_path(named)
    if path is not None:
        nodes, meta = saved.load(path)
        context = named or meta["context"]
        return cluster_catalog(spec, nodes, catalog, context=context,
                               read=f"as saved {meta['saved_at']} in {path}")
    try:
        context = context_name(named)
        nodes = read_nodes((connect or _connect)(context))
    except ProviderError as exc:
        if live or not kubeconfig_missing():
            raise
        raise ProviderError(exc.message, hint=saved.no_kubeconfig_hint(named, exc)) from None
    return cluster_catalog(spec, nodes, catalog, context=context)


def schedule(plan: "Plan", *, connect: Callable | None = None) -> list[dict[str, Any]]:
    """`preview`'s and `up`'s schedulability rows, against the nodes as they are now."""
    from reclaunch.providers.kubernetes.fit import schedule as on_nodes
    from reclaunch.runtime.kube_nodes import read_nodes
    return on_nodes(plan, read_nodes((connect or _connect)(plan.region)))


def save_nodes(context: str | None, out: str | None) -> tuple[str, dict[str, Any]]:
    """The cluster's nodes and what its pods request, saved where `plan` finds them by the
    spec's context (or at `out`). -> (context, {nodes, pods, path})."""
    from pathlib import Path

    from reclaunch import host
    from reclaunch.providers.kubernetes import saved
    from reclaunch.providers.kubernetes.connect import context_name

    name = context_name(context)
    done = saved.save(_connect(name), name, Path(out) if out else saved.default_path(name),
                      host.today())
    return name, done


def sweeper(region: str, **options: Any):
    from reclaunch.providers.kubernetes.sweep import KubernetesSweeper
    return KubernetesSweeper(region, **options)


class KubernetesProvider(KubeCloudProvider):
    """The Provider protocol on a cluster you bring (KubeCloudProvider's verbs, another engine)."""

    def __init__(self, *, connect: Callable | None = None, env_overrides: dict | None = None):
        super().__init__(CLOUD, env_overrides=env_overrides)
        self.connect = connect or _connect

    def check_ready(self, plan: "Plan | None" = None) -> None:
        """The kubeconfig reaches the API; for `up`, the training operator is installed."""
        from reclaunch.providers.kubernetes.connect import OPERATOR_FIX, operator_problem
        if plan is None:
            return   # down/status name the context from the record and fail there if needed
        problem = operator_problem(self.connect(plan.region))
        if problem:
            raise ProviderError(f"cluster {plan.region}: {problem}", hint=OPERATOR_FIX)

    def env(self, backend: str | None = None):
        from reclaunch.providers.kubernetes.infra import OwnClusterInfra, RecordingKube
        from reclaunch.runtime.lifecycle import Env

        def kube_for(outputs: dict[str, Any]):
            base = self.connect(outputs.get("context"))
            return RecordingKube(base.api, outputs["name"]) if outputs.get("name") else base

        kw: dict[str, Any] = dict(
            infra=OwnClusterInfra(self.connect), kube_for=kube_for, verify=self.verify,
            schedule=lambda plan: schedule(plan, connect=self.connect),
            stop_hint=lambda kind: "the cluster's nodes are what they are: free some, or ask for fewer")
        kw.update(self.env_overrides)
        return Env(**kw)

    def verify(self, rec: "ClusterRecord", keep_storage: bool) -> list[str]:
        from reclaunch.providers.kubernetes.infra import leftovers, read_state
        state = read_state(rec.name) or {}
        kube = self.connect(state.get("context") or rec.region)
        return leftovers(kube, rec.name, rec.namespace, keep_storage,
                         bool(state.get("namespace_created")))

    def adopt(self, spec_path: str, backend: str | None) -> None:
        raise ProviderError("no record of this cluster's launch here: nothing `up` applied is "
                            "known", hint="`reclaunch gc --cloud kubernetes --region CONTEXT "
                            "--cluster NAME` finds our labelled objects")


def provider(**overrides) -> KubernetesProvider:
    connect = overrides.pop("connect", None)
    return KubernetesProvider(connect=connect, env_overrides=overrides)
