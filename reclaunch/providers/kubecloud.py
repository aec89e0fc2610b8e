"""The Kubernetes-cloud provider shared by every cloud with a stack (facts kind "kube").

A cloud's provider module (`providers/<cloud>/provider.py`) declares a CloudSpec: how to tell
whether credentials are there (the one check `up` and `reclaunch check` both ask), which error
texts mean "no capacity" or "over quota", and where its Pulumi program lives. Everything else
(Pulumi stack, PyTorchJob, watch, teardown) is the same path through `reclaunch.runtime.lifecycle`.
The detached watcher (`up --detach`) is its own module, reclaunch/providers/watcher.py.
"""

from __future__ import annotations


import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, NamedTuple

from reclaunch import clouds
from reclaunch.errors import ProviderError

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.runtime.journal import ClusterRecord
    from reclaunch.runtime.lifecycle import Env
    from reclaunch.planner.model import Plan
    from reclaunch.providers import JobStatus
    from reclaunch.providers.options import UpOptions

# Capacity kinds and what the fallback policy may do about them.
CAPACITY = "capacity"            # this zone has none: another zone, then on-demand
SPOT_CAPACITY = "spot_capacity"  # no spot at this price/zone: another zone, then on-demand
SPOT_QUOTA = "spot_quota"        # spot quota exhausted: on-demand (its own quota) may work
QUOTA = "quota"                  # account quota: no retry helps, the user must ask for more



class Answer(NamedTuple):
    """A cloud's answer to one readiness question: ok (True), missing (False) or cannot tell
    (None) without a call, what it saw, and how to fix it (SkyPilot's (bool, reason))."""

    ok: bool | None
    detail: str
    fix: str | None = None


@dataclass
class CloudSpec:
    name: str
    program: str                                          # "module:function" of the Pulumi program
    sweeper: str                                          # "module:Class" of the tag sweeper
    prices: str                                           # "module:function" of the price fetcher
    # What this machine would log in with, read without a network call: `up` stops on False
    # before it creates anything, and `reclaunch check` prints the same answer.
    credentials: Callable[[], Answer]
    errors: list[tuple[str, str]]                         # (regex, kind), first match wins
    quota_fix: str
    capacity_fix: str
    # The GPU quota for a plan, asked of the cloud's quota API (`client`: a stubbed SDK client
    # in tests, None to make one); None: `check` says how to look by hand (quota_by_hand,
    # with {region}).
    quota: Callable[["Plan", Any], Answer] | None = None
    quota_by_hand: str = ""
    # (topic, question) that `check FILE` asks besides credentials and quota (a cluster you
    # bring: is the training operator installed).
    readiness: tuple[str, Callable[["Plan"], Answer]] | None = None
    stack_config: Callable[["Plan"], dict[str, str]] = lambda plan: {}
    # Extra error text after a failed `up` (AWS: the GPU groups' failed scaling activities),
    # so classify() sees capacity errors the engine's own message does not carry.
    diagnose: Callable[["Plan"], str] = lambda plan: ""
    # "module:function" answering the cloud's supported Kubernetes versions for the plan's
    # region (providers/<cloud>/versions.py); asked once per `up` (providers/versions.py).
    kube_versions: str = ""
    # "module:function" giving the "needs a person" list at `up`, when the cloud must be asked
    # for part of it (Azure: encryption at host); "" = the pure stacks.<cloud> list.
    prerequisites: str = ""
    # "module:function" (plan -> lines): storage the stack would create that already exists and
    # is not this cluster's (a bucket the user owns); `up` refuses on any, before it creates
    # anything, so `down` never deletes it. "" = none to check.
    foreign_storage: str = ""


def classify(errors: list[tuple[str, str]], text: str) -> str | None:
    for pattern, kind in errors:
        if re.search(pattern, text or "", re.IGNORECASE):
            return kind
    return None


def fallback(plan: "Plan", kind: str) -> tuple[str, "Plan"] | None:
    """The next thing to try after `kind`, or None for a clear stop. Every cloud sells GPUs
    zone by zone, so another zone of the spec's list is always worth one try."""
    from reclaunch.runtime.lifecycle import variant
    planned = plan.zones_as_planned or list(plan.zones)
    if kind in (CAPACITY, SPOT_CAPACITY) and len(plan.zones) > 1:
        zones = plan.zones[1:]
        return f"zone(s) {', '.join(zones)}", variant(plan, {"zones": zones, "spot": plan.spot})
    if kind in (CAPACITY, SPOT_CAPACITY, SPOT_QUOTA) and plan.spot \
            and plan.spec.spot.fallback == "on-demand":
        return "on-demand (spot.fallback)", variant(plan, {"zones": planned, "spot": False})
    return None


class KubeCloudProvider:
    """Implements the `reclaunch.providers.Provider` protocol for one cloud."""

    def __init__(self, cloud: CloudSpec, *, env_overrides: dict[str, Any] | None = None):
        self.cloud = cloud
        self.name = cloud.name
        self.env_overrides = env_overrides or {}

    # ---- readiness -----------------------------------------------------------------------
    def check_ready(self, plan: "Plan | None" = None) -> None:
        """Pulumi CLI, then credentials: one line with the fix, before anything is created."""
        infra = self.env_overrides.get("infra")
        if infra is not None:
            infra.check()
        else:
            from reclaunch.runtime.infra import check_pulumi_cli
            check_pulumi_cli()
        got = self.cloud.credentials()
        if got.ok is False:
            raise ProviderError(got.detail, hint=got.fix)

    # ---- wiring --------------------------------------------------------------------------
    def env(self, backend: str | None = None) -> "Env":
        from reclaunch.runtime.lifecycle import Env
        kw: dict[str, Any] = dict(
            classify=lambda text: classify(self.cloud.errors, text),
            fallback=fallback,
            stop_hint=lambda kind: self.cloud.quota_fix if kind in (QUOTA, SPOT_QUOTA)
            else self.cloud.capacity_fix,
            verify=self.verify, prerequisites=self._prerequisites, check_nodes=_check_nodes)
        kw.update(self.env_overrides)
        if "infra" not in kw:
            from reclaunch.runtime.infra import PulumiInfra
            kw["infra"] = PulumiInfra(program=self._program, config=self._config,
                                      extra=clouds.get(self.name).pip_extra,
                                      diagnose=self.cloud.diagnose, backend=backend,
                                      compute=clouds.get(self.name).compute_types)
        if "kube_for" not in kw:
            kw["kube_for"] = _kube_for
        return Env(**kw)

    def _config(self, plan: "Plan") -> dict[str, str]:
        from reclaunch.providers.caller import access_config
        return {**self.cloud.stack_config(plan), **access_config(plan),
                **self._kube_version(plan)}

    def _kube_version(self, plan: "Plan") -> dict[str, str]:
        """reclaunch:kubernetesVersion from the cloud's own answer (the dated table without)."""
        if not self.cloud.kube_versions:
            return {}
        import importlib

        from reclaunch.providers.versions import resolve
        mod, _, fn = self.cloud.kube_versions.partition(":")
        offered = getattr(importlib.import_module(mod), fn)
        return resolve(plan, offered, where=f"{self.cloud.name} in {plan.region}")

    def _prerequisites(self, plan: "Plan") -> list[str]:
        from stacks.versions import person_lines   # an add-on pin holding the minor back

        if not self.cloud.prerequisites:
            return [*_prerequisites(plan), *person_lines(plan)]
        import importlib

        mod, _, fn = self.cloud.prerequisites.partition(":")
        return [*getattr(importlib.import_module(mod), fn)(plan), *person_lines(plan)]

    def _foreign_storage(self, plan: "Plan", infra: Any = None) -> list[str]:
        if not self.cloud.foreign_storage:
            return []
        import importlib

        mod, _, fn = self.cloud.foreign_storage.partition(":")
        holds = getattr(infra, "holds", None)   # the stack's own state: proof of ownership
        return getattr(importlib.import_module(mod), fn)(
            plan, held=(lambda rid: holds(plan.name, rid)) if holds else None)

    def _program(self, plan: "Plan") -> Callable[[], None]:
        from reclaunch.providers import stack_program
        fn = stack_program(self.cloud.name)
        return lambda: fn(plan)

    def verify(self, rec: "ClusterRecord", keep_storage: bool) -> list[str]:
        """Everything still tagged for this cluster, by the cloud's own API (the gc sweep)."""
        try:
            from reclaunch.providers import sweeper_for
            sweeper = sweeper_for(rec.cloud, rec.region or "")
        except (ImportError, AttributeError) as exc:
            raise ProviderError(f"cannot verify the teardown of {rec.name}: {exc}",
                                hint=f"run `reclaunch gc --cluster {rec.name}` once available")
        left = sweeper.list(rec.name)
        if keep_storage:   # the resource kinds that hold the dataset (every storage kind's hints)
            from reclaunch.spec.facts import storage_resource_hints
            hints = storage_resource_hints()
            left = [o for o in left if not any(k in o.kind.lower() for k in hints)]
        return [o.label for o in left]

    # ---- the Provider protocol -----------------------------------------------------------
    def up(self, plan: "Plan", options: "UpOptions | None" = None) -> "JobStatus":
        from reclaunch.providers.options import UpOptions
        from reclaunch.runtime import lifecycle
        o = options or UpOptions()
        self.check_ready(plan)
        env = self.env(o.backend)
        taken = self._foreign_storage(plan, env.infra)
        if taken:
            from reclaunch.errors import UsageError
            raise UsageError(f"refusing to start: {'; '.join(taken)}",
                             hint="name a new bucket, or keep yours and use it as your own "
                                  "(storage.kind: none with the same job.checkpoint.path)")
        text = open(o.spec_path).read() if o.spec_path and os.path.exists(o.spec_path) else None
        from reclaunch.runtime.backend import redact   # the journal never holds credentials
        # What the journal record says besides the plan; lifecycle.up builds it from the one
        # launch it renders.
        about = {"backend": redact(o.backend), "spec_path": o.spec_path, "spec_text": text}

        def after(r: "ClusterRecord") -> None:
            if o.detach:
                from reclaunch.providers.watcher import spawn_watcher
                spawn_watcher(r.name, o.backend)
            if o.on_started:   # e.g. releases the name's lock
                o.on_started()
        return lifecycle.up(plan, env, yes=o.yes, force=o.force, preflight=o.preflight,
                            watch=o.watch, record=about, after_start=after)

    # ---- name claims (claims.py) ----------------------------------------------------------
    def holds(self, name: str) -> tuple[str, str | None, str] | None:
        """The journal's cluster of this cloud, until a destroy finished with nothing after."""
        from reclaunch.errors import ReclaunchError
        from reclaunch.runtime.journal import Journal
        from reclaunch.home import root
        if not (root() / "journal" / f"{name}.jsonl").exists():   # look, never create
            return None
        j = Journal(name)
        try:
            rec = j.record()
        except ReclaunchError:
            return None
        if rec is None or rec.cloud != self.name:
            return None
        last = j.last("destroy")
        if last and last["outcome"] == "ok" and not j.done("provision"):
            return None
        where = f" in {rec.region}" if rec.region else ""
        return (self.name, rec.region, f"a {self.name} cluster{where} (from {rec.spec_path or 'a spec'})")

    def interrupted_hint(self, name: str, path: str) -> str:
        return (f"`reclaunch status {name}` shows it; `reclaunch up {path}` resumes, "
                f"`reclaunch down {name}` removes it")

    def adopt(self, spec_path: str, backend: str | None) -> None:
        """Journal lost or damaged: rebuild its record from the spec, so `down` can destroy
        the stack and verify by the tag sweep that nothing is left."""
        from reclaunch import planner
        from reclaunch.runtime import lifecycle
        from reclaunch.runtime.journal import Journal
        from reclaunch.spec import load_spec
        self.check_ready(None)   # no record is written for a down that cannot run anyway
        plan = planner.make_plan(load_spec(spec_path))
        j = Journal(plan.name)
        j.write("adopt", "info", message="journal lost or damaged: record rebuilt from "
                f"{spec_path} by `reclaunch down`")
        from reclaunch.runtime.backend import redact
        j.save_record(lifecycle.record_for(plan, backend=redact(backend), spec_path=spec_path))

    def _env_for(self, name: str, backend: str | None) -> "Env":
        from reclaunch.errors import UsageError
        from reclaunch.runtime.backend import needs_secret
        from reclaunch.runtime.journal import Journal
        backend = backend or os.environ.get("RECLAUNCH_BACKEND") or Journal(name).record().backend
        if needs_secret(backend):
            raise UsageError(f"{name}'s state backend needs credentials, which are never stored",
                             hint="pass --backend URL again")
        return self.env(backend)

    def watch(self, name: str, backend: str | None = None) -> "JobStatus":
        from reclaunch.runtime import lifecycle
        from reclaunch.runtime.journal import Journal
        return lifecycle.watch_job(Journal(name).record(), self._env_for(name, backend))

    def status(self, name: str, backend: str | None = None) -> "JobStatus":
        from reclaunch.runtime import lifecycle
        return lifecycle.status(name, self._env_for(name, backend))

    def logs(self, name: str, rank: int | None = None, follow: bool = False,
             backend: str | None = None) -> Iterator[str]:
        from reclaunch.runtime import lifecycle
        return lifecycle.logs(name, self._env_for(name, backend), rank=rank, follow=follow)

    def exec(self, name: str, command: list[str], *, rank: int = 0,
             interactive: bool = False) -> int:
        """`reclaunch exec`: `command` in the pod of node rank `rank`; its exit code."""
        from reclaunch.runtime import kube_shell
        kube, ns, pod = kube_shell.pod_of(name, self._env_for(name, None), rank)
        return kube_shell.run(kube, ns, pod, command or kube_shell.SHELL, interactive=interactive)

    def port_forward(self, name: str, port: int, *, local_port: int | None = None, rank: int = 0,
                     ready=None, stop=None, connections: int | None = None, on_error=None) -> None:
        """`reclaunch port-forward`: 127.0.0.1:local_port to `port` of the pod of node rank `rank`."""
        from reclaunch.runtime import kube_shell, relay
        kube, ns, pod = kube_shell.pod_of(name, self._env_for(name, None), rank)
        relay.serve(kube_shell.connector(kube, ns, pod, port),
                    local_port=port if local_port is None else local_port, ready=ready, stop=stop,
                    connections=connections, on_error=on_error)

    def all_logs(self, name: str, backend: str | None = None) -> Iterator[str]:
        from reclaunch.runtime.observe import pod_lines
        return pod_lines(name, self._env_for(name, backend))

    def down(self, name: str, *, keep_storage: bool = False, yes: bool = False,
             backend: str | None = None) -> None:
        from reclaunch.runtime import lifecycle
        self.check_ready(None)
        lifecycle.down(name, self._env_for(name, backend), yes=yes, keep_storage=keep_storage)


def _prerequisites(plan: "Plan") -> list[str]:
    """stacks.<cloud>.manual_prerequisites: quotas, registrations, reservations to buy."""
    from stacks import manual_prerequisites
    return manual_prerequisites(plan)


def _kube_for(outputs: dict[str, Any]):
    from reclaunch.runtime.kube import Kube
    kubeconfig = outputs.get("kubeconfig")
    if not kubeconfig:
        raise ProviderError("the stack has no kubeconfig output; was provisioning completed?",
                            hint="rerun `reclaunch up`")
    return Kube.from_kubeconfig(kubeconfig)


def _check_nodes(plan: "Plan", kube: Any, launch: Any, force: bool, env: Any) -> dict[str, Any]:
    from reclaunch.providers.node_check import check
    return check(plan, kube, launch, out=env.out(), force=force, sleep=env.sleep, clock=env.clock)
