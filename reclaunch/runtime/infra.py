"""Provisioning through the Pulumi Automation API: one stack per cluster name.

`Infra` is the interface the lifecycle talks to; `PulumiInfra` is the real one, tests use a
fake behind the same methods. State lives in a local file backend by default
(`$RECLAUNCH_HOME/state`, owner-only), or wherever `--backend URL` says (s3://, azblob://,
gs://, https://api.pulumi.com). Secrets are encrypted with PULUMI_CONFIG_PASSPHRASE, or a
passphrase generated once and kept 0600 next to the state.

`pulumi.automation` is imported only inside methods: the CLI starts without it.
"""

from __future__ import annotations

import os
import secrets
import shutil
from typing import TYPE_CHECKING, Any, Callable

from reclaunch.errors import ProviderError, require
from reclaunch.home import private_dir

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

PROJECT = "reclaunch"
PULUMI_MISSING = ("Pulumi CLI not found on PATH; `reclaunch up` and `down` need it to provision "
                  "the cluster")
PULUMI_FIX = "install it: curl -fsSL https://get.pulumi.com | sh  (or: brew install pulumi)"


Event = dict[str, Any]   # {"kind": "resource"|"diag"|"summary", "urn", "type", "op", "status", "message"}
OnEvent = Callable[[Event], None]


class InfraError(ProviderError):
    """A stack operation failed. `output` keeps the full engine text for error classification."""

    def __init__(self, message: str, output: str = "", *, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.output = output or message


class Infra:
    """What the lifecycle needs from a provisioning engine."""

    def check(self) -> None:
        """Raise ProviderError (one line, with the fix) when the engine cannot run here."""

    def exists(self, name: str) -> bool:
        raise NotImplementedError

    def up(self, plan: "Plan", on_event: OnEvent | None = None) -> dict[str, Any]:
        """Create or update the stack to match the plan; return its outputs."""
        raise NotImplementedError

    def outputs(self, name: str) -> dict[str, Any]:
        raise NotImplementedError

    def destroy(self, name: str, *, keep_storage: bool = False,
                on_event: OnEvent | None = None) -> None:
        raise NotImplementedError

    def pending(self, name: str) -> list[dict[str, Any]]:
        """Operations an interrupted run left in the state (urn, type, op)."""
        raise NotImplementedError

    def clear_pending(self, name: str) -> list[dict[str, Any]]:
        """Clear them (cancel + refresh); return what was cleared for the journal."""
        raise NotImplementedError


_ADVISED: set[str] = set()


def check_pulumi_cli() -> str:
    path = shutil.which("pulumi")
    if not path:
        raise ProviderError(PULUMI_MISSING, hint=PULUMI_FIX)
    return path


def passphrase() -> str:
    """PULUMI_CONFIG_PASSPHRASE if set, else one generated on first use and stored 0600."""
    if os.environ.get("PULUMI_CONFIG_PASSPHRASE"):
        return os.environ["PULUMI_CONFIG_PASSPHRASE"]
    f = private_dir() / "passphrase"
    if not f.exists():
        fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_urlsafe(32))
    return f.read_text().strip()


def default_backend() -> str:
    return "file://" + str(private_dir("state"))


def simplify(ev: Any) -> Event | None:
    """Pulumi EngineEvent -> the small dict the progress display (and fakes) use."""
    if ev.resource_pre_event is not None:
        m = ev.resource_pre_event.metadata
        return {"kind": "resource", "urn": m.urn, "type": m.type, "op": str(m.op), "status": "start"}
    if ev.res_outputs_event is not None:
        m = ev.res_outputs_event.metadata
        return {"kind": "resource", "urn": m.urn, "type": m.type, "op": str(m.op), "status": "done"}
    if ev.res_op_failed_event is not None:
        m = ev.res_op_failed_event.metadata
        return {"kind": "resource", "urn": m.urn, "type": m.type, "op": str(m.op), "status": "failed"}
    if ev.diagnostic_event is not None and ev.diagnostic_event.severity in ("error", "warning"):
        d = ev.diagnostic_event
        return {"kind": "diag", "urn": d.urn, "status": d.severity, "message": d.message.strip()}
    if ev.summary_event is not None:
        return {"kind": "summary", "status": "done",
                "message": str(ev.summary_event.resource_changes)}
    return None


def _provider_urn(r: dict[str, Any], by_urn: dict[str, Any]) -> str:
    """A resource's provider reference is `URN::id` in a checkpoint, the bare URN in preview."""
    p = r.get("provider") or ""
    return p if p in by_urn or "::" not in p else p.rsplit("::", 1)[0]


def storage_keep_set(resources: list[dict[str, Any]], storage_ids: set[str],
                     compute: tuple[str, ...] = ()) -> set[str]:
    """URNs to keep for --keep-storage: the storage resources and everything they need, but
    nothing of the cluster. Objects inside the cluster are told apart by Pulumi's own graph: a
    provider the program configures from its own resources (a kubeconfig made from the
    cluster) manages them (volumes, Helm releases, namespaces), and they go with it. The
    cluster and its nodes are the cloud's `compute` types (CloudFacts.compute_types): a kept
    resource that needs one would keep it billing (or make the targeted destroy refuse), so
    that is a ProviderError before anything is destroyed."""
    from reclaunch.spec.facts import storage_resource_hints   # every storage kind's record

    by_urn = {r["urn"]: r for r in resources}

    def deps(r: dict[str, Any]) -> list[str]:
        return [*(r.get("dependencies") or []),
                *(u for us in (r.get("propertyDependencies") or {}).values() for u in us)]

    configured = {u for u, r in by_urn.items()
                  if r.get("type", "").startswith("pulumi:providers:") and deps(r)}
    inside = configured | {u for u, r in by_urn.items()
                           if _provider_urn(r, by_urn) in configured}
    todo = [(r["urn"], None) for r in resources if r["urn"] not in inside and (
        r.get("id") in storage_ids
        or any(h in r.get("type", "").lower() for h in storage_resource_hints()))]
    keep: set[str] = set()
    while todo:
        urn, needed_by = todo.pop()
        if urn in keep or urn not in by_urn or urn in inside:
            continue
        if compute and by_urn[urn].get("type", "").startswith(compute):
            raise ProviderError(
                f"--keep-storage would keep the cluster: {needed_by} depends on {urn}",
                hint="run `reclaunch down` without --keep-storage, or copy the data out first")
        keep.add(urn)
        r = by_urn[urn]
        todo += [(d, urn) for d in deps(r)]
        if r.get("parent"):
            todo.append((r["parent"], urn))
        if r.get("provider"):
            todo.append((_provider_urn(r, by_urn), urn))
    return keep


class PulumiInfra(Infra):
    """The real engine. `program(plan)` builds the inline Pulumi program for a plan;
    `config(plan)` gives stack config such as {"aws:region": "us-east-1"}."""

    def __init__(self, program: Callable[["Plan"], Callable[[], None]],
                 config: Callable[["Plan"], dict[str, str]] | None = None,
                 backend: str | None = None, extra: str = "all",
                 diagnose: Callable[["Plan"], str] | None = None,
                 compute: tuple[str, ...] = ()):
        self.program = program
        self.compute = compute    # the cloud's cluster and node types (never kept)
        self.config = config or (lambda plan: {})
        self.diagnose = diagnose
        self.backend = backend or default_backend()
        self.extra = extra  # named in the message when Pulumi's SDK is missing

    # ---- setup ---------------------------------------------------------------------------
    def check(self) -> None:
        check_pulumi_cli()
        require("pulumi.automation", self.extra)

    def _opts(self, name: str):
        auto = require("pulumi.automation", self.extra)
        work = private_dir("stacks", name)
        env = {"PULUMI_CONFIG_PASSPHRASE": passphrase(), "PULUMI_SKIP_UPDATE_CHECK": "true"}
        cloud_backend = self.backend.startswith(("https://", "http://"))
        from reclaunch.runtime.backend import kms_advice, secrets_provider
        advice = kms_advice(self.backend)
        if advice and advice not in _ADVISED:   # once per process, not per stack call
            _ADVISED.add(advice)
            import logging
            logging.getLogger("reclaunch.infra").warning(advice)
        return auto.LocalWorkspaceOptions(
            work_dir=str(work), env_vars=env,
            secrets_provider=None if cloud_backend else secrets_provider(self.backend),
            project_settings=auto.ProjectSettings(
                name=PROJECT, runtime="python", backend=auto.ProjectBackend(url=self.backend)))

    def _stack(self, name: str, program: Callable[[], None] | None = None, create: bool = True):
        auto = require("pulumi.automation", self.extra)
        self.check()
        prog = program or (lambda: None)  # destroy/export never run the program
        try:
            if create:
                return auto.create_or_select_stack(stack_name=name, project_name=PROJECT,
                                                   program=prog, opts=self._opts(name))
            return auto.select_stack(stack_name=name, project_name=PROJECT, program=prog,
                                     opts=self._opts(name))
        except auto.StackNotFoundError:
            raise
        except auto.CommandError as exc:
            from reclaunch.runtime.backend import redact
            raise _infra_error(f"cannot open stack {name!r} at {redact(self.backend)}", exc,
                               self.backend) from None

    def exists(self, name: str) -> bool:
        auto = require("pulumi.automation", self.extra)
        try:
            self._stack(name, create=False)
            return True
        except auto.StackNotFoundError:
            return False

    # ---- operations ----------------------------------------------------------------------
    def up(self, plan: "Plan", on_event: OnEvent | None = None) -> dict[str, Any]:
        auto = require("pulumi.automation", self.extra)
        stack = self._stack(plan.name, self.program(plan))
        cfg = self.config(plan)
        if cfg:
            stack.set_all_config({k: auto.ConfigValue(value=str(v)) for k, v in cfg.items()})
        try:
            res = stack.up(on_event=_forward(on_event), color="never", suppress_progress=True)
        except auto.CommandError as exc:
            raise with_diagnosis(_infra_error(f"provisioning {plan.name} failed", exc, self.backend),
                                 self.diagnose, plan) from None
        return {k: v.value for k, v in res.outputs.items()}

    def outputs(self, name: str) -> dict[str, Any]:
        stack = self._stack(name, create=False)
        return {k: v.value for k, v in stack.outputs().items()}

    def holds(self, name: str, resource_id: str) -> bool:
        """Whether stack `name`'s state holds a resource with this cloud id (what it created)."""
        auto = require("pulumi.automation", self.extra)
        try:
            stack = self._stack(name, create=False)
        except auto.StackNotFoundError:
            return False
        resources = stack.export_stack().deployment.get("resources") or []
        return any(r.get("id") == resource_id for r in resources)

    def destroy(self, name: str, *, keep_storage: bool = False,
                on_event: OnEvent | None = None) -> None:
        auto = require("pulumi.automation", self.extra)
        try:
            stack = self._stack(name, create=False)
        except auto.StackNotFoundError:
            return  # nothing recorded; the caller's verify (tag sweep) still runs
        kw: dict[str, Any] = {}
        if keep_storage:
            resources = stack.export_stack().deployment.get("resources") or []
            outs = self.outputs(name)
            ids = {str(v) for v in _flat([outs.get("storage_id"), outs.get("storage_ids")])}
            keep = storage_keep_set(resources, ids, self.compute)
            kw["target"] = [r["urn"] for r in resources
                            if r["urn"] not in keep and not r["type"].startswith("pulumi:")]
            if not kw["target"]:
                return
        try:
            stack.destroy(on_event=_forward(on_event), color="never", suppress_progress=True, **kw)
        except auto.CommandError as exc:
            raise _infra_error(f"destroying {name} failed", exc, self.backend) from None
        if not keep_storage:
            stack.workspace.remove_stack(name)

    def pending(self, name: str) -> list[dict[str, Any]]:
        auto = require("pulumi.automation", self.extra)
        try:
            stack = self._stack(name, create=False)
        except auto.StackNotFoundError:
            return []
        ops = stack.export_stack().deployment.get("pending_operations") or []
        return [{"urn": o.get("resource", {}).get("urn"), "type": o.get("resource", {}).get("type"),
                 "op": o.get("type")} for o in ops]

    def clear_pending(self, name: str) -> list[dict[str, Any]]:
        auto = require("pulumi.automation", self.extra)
        ops = self.pending(name)
        if not ops:
            return []
        stack = self._stack(name, create=False)
        try:
            stack.cancel()  # a still-locked update (remote backends); harmless when none runs
        except auto.CommandError:
            pass
        # `pulumi stack export | drop pending_operations | import`: what the CLI itself advises.
        dep = stack.export_stack()
        stack.import_stack(auto.Deployment(version=dep.version, deployment={
            **dict(dep.deployment or {}), "pending_operations": []}))
        try:
            stack.refresh(color="never", suppress_progress=True)
        except auto.CommandError as exc:
            raise _infra_error(f"refreshing {name} after an interrupted run failed", exc,
                               self.backend) from None
        return ops


def _flat(v: Any) -> list[Any]:
    if v is None:
        return []
    if isinstance(v, dict):
        return [x for val in v.values() for x in _flat(val)]
    if isinstance(v, (list, tuple)):
        return [x for val in v for x in _flat(val)]
    return [v]


def _forward(on_event: OnEvent | None):
    if on_event is None:
        return None

    def cb(ev: Any) -> None:
        e = simplify(ev)
        if e is not None:
            on_event(e)
    return cb


def with_diagnosis(err: InfraError, diagnose: Callable[["Plan"], str] | None,
                   plan: "Plan") -> InfraError:
    """Append what the cloud itself says went wrong (never raises: it only adds detail)."""
    try:
        extra = diagnose(plan) if diagnose else ""
    except Exception:  # noqa: BLE001
        extra = ""
    if not extra:
        return err
    first = extra.strip().splitlines()[0][:300]
    return InfraError(f"{err.message}; {first}", f"{err.output}\n{extra}", hint=err.hint)


def _infra_error(message: str, exc: Any, backend: str | None = None) -> InfraError:
    from reclaunch.runtime.backend import scrub
    text = scrub(f"{getattr(exc, 'stderr', '')}\n{getattr(exc, 'stdout', '')}\n{exc}", backend)
    lines = [ln.strip() for ln in text.splitlines() if "error:" in ln.lower()]
    detail = lines[-1] if lines else str(exc).strip().splitlines()[-1:] or [""]
    detail = detail if isinstance(detail, str) else detail[0]
    return InfraError(f"{message}: {detail[:300]}", text)
