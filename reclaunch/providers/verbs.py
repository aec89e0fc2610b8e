"""The CLI's verbs that act on a cluster: pick its provider (from the spec or the journal) and
call the Provider protocol. The only place between the CLI and the targets."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from reclaunch.errors import ReclaunchError, UsageError
from reclaunch.runtime.journal import Journal

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.runtime.states import JobStatus



def provider_for(name: str):
    """The provider of a known cluster (from its journal record; with the record lost or
    damaged, the provider that still holds the name, so `status`, `logs`, `diagnose` and
    `preempt` all agree on whether the cluster exists)."""
    from reclaunch.providers import get
    from reclaunch.providers.claims import provider_without_journal
    _check_name(name)
    try:
        return get(Journal(name).record().cloud)
    except ReclaunchError as exc:
        return provider_without_journal(name, None, None, exc)


def _check_name(name: str) -> None:
    import re

    from reclaunch.clouds import CLUSTER_NAME
    if not re.fullmatch(CLUSTER_NAME, name or ""):   # the spec's rule; never a path
        raise UsageError(f"{name!r} is not a cluster name (1..40 characters of a-z, 0-9 and '-')",
                         hint="`reclaunch status` lists known clusters")


_provider_for = provider_for


def cli_up(path: str, *, yes: bool = False, force: bool = False, preflight: bool = False,
           watch: bool = True, detach: bool = False, backend: str | None = None,
           fresh: bool = False) -> "JobStatus":
    """`reclaunch up FILE`: every check that needs no cloud runs before anything is created.

    The cluster's lock (runtime/locks.py) is held until the job is started, not while it is
    watched: `down` from another terminal must stay possible during a long run."""
    from reclaunch.catalog import load_catalog
    from reclaunch.planner import make_plan
    from reclaunch.providers import get
    from reclaunch.providers.claims import refuse_taken_name
    from reclaunch.providers.options import UpOptions
    from reclaunch.runtime.backend import check_backend
    from reclaunch.runtime.locks import cluster_lock
    from reclaunch.spec import load_spec
    backend = check_backend(backend)
    catalog = load_catalog()   # once: validation and planning read the same prices
    from reclaunch.runtime.measurements import plan_context
    spec = load_spec(path, catalog)   # priced as `plan` prices it: measured runs, this host
    from reclaunch.providers import planning_catalog
    catalog = planning_catalog(spec, catalog, live=True)   # cloud: kubernetes: its nodes now
    plan = make_plan(spec, catalog, context=plan_context(spec, preflight=preflight))
    provider = get(plan.cloud)
    lock = cluster_lock(plan.name, "up").acquire()
    try:
        refuse_taken_name(plan)   # before credentials: a taken name is the first thing to fix
        provider.check_ready(plan)
        return provider.up(plan, UpOptions(yes=yes, force=force, preflight=preflight,
                                           detach=detach or not watch, backend=backend,
                                           spec_path=str(path), fresh=fresh,
                                           on_started=lock.release))
    except KeyboardInterrupt:
        err = ReclaunchError("interrupted: whatever `up` had already created or started is "
                             "still there", hint=provider.interrupted_hint(plan.name, path))
        err.exit_code = 130
        raise err from None
    finally:
        lock.release()   # a no-op once on_started released it


def cli_status(name: str | None = None) -> list["JobStatus"]:
    from reclaunch.errors import ReclaunchError
    from reclaunch.runtime.journal import known_clusters
    from reclaunch.providers.claims import provider_without_journal
    from reclaunch.runtime.lifecycle import _status_obj
    if name is not None:
        _check_name(name)   # never a path: `status ../../x` must not read outside the home
        try:
            return with_measured([_provider_for(name).status(name)])
        except ReclaunchError as exc:
            return with_measured([provider_without_journal(name, None, None, exc).status(name)])
    from reclaunch.providers.claims import names_without_journal
    out = []
    for n in sorted({*known_clusters(), *names_without_journal()}):
        try:   # one unreadable cluster must not hide the others
            out.append(_provider_for(n).status(n))
        except ReclaunchError as exc:
            try:   # a lost journal: the provider that still has it (local state dir)
                out.append(provider_without_journal(n, None, None, exc).status(n))
            except ReclaunchError:
                out.append(_status_obj(n, "?", "Unknown", str(exc)))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            out.append(_status_obj(n, "?", "Unknown", f"unreadable state: {type(exc).__name__}: {exc}"))
    return with_measured(out)


# States whose job has (or had) processes that may have reported metrics.
_MEASURABLE = ("Running", "Restarting", "Succeeded", "Failed", "Stopped")


def with_measured(statuses: list["JobStatus"]) -> list["JobStatus"]:
    """Add measured samples/s and the projection at that rate beside the plan
    (details["measured"]) where the job has reported RECLAUNCH_METRICS lines."""
    from reclaunch.errors import ReclaunchError
    from reclaunch.runtime.observe import measured_brief
    for st in statuses:
        if st.state not in _MEASURABLE:
            continue
        try:
            brief = measured_brief(st.name, _provider_for(st.name))
        except ReclaunchError:
            brief = None
        if brief is not None:
            st.details["measured"] = brief
    return statuses


def cli_diagnose(name: str):
    """`reclaunch diagnose NAME`: the Diagnosis (runtime.diagnose) of a known cluster."""
    from reclaunch.runtime.observe import diagnose_cluster
    return diagnose_cluster(name, _provider_for(name))


def cli_logs(name: str, *, rank: int | None = None, follow: bool = False) -> Iterator[str]:
    return _provider_for(name).logs(name, rank=rank, follow=follow)


def cli_down(name_or_file: str, *, yes: bool = False, keep_storage: bool = False,
             backend: str | None = None) -> None:
    import os

    from reclaunch.providers.claims import provider_without_journal
    from reclaunch.runtime.backend import check_backend
    from reclaunch.runtime.locks import cluster_lock
    backend = check_backend(backend)
    name, spec_path = name_or_file, None
    # A path (even a missing or wrong one) is a spec: its error beats "no cluster named 'a/b'".
    if os.path.isfile(name_or_file) or os.sep in name_or_file or \
            name_or_file.endswith((".yaml", ".yml")):
        from reclaunch.spec import load_spec
        name, spec_path = load_spec(name_or_file).name, name_or_file
    _check_name(name)   # it names the lock file: never a path
    with cluster_lock(name, "down"):
        try:
            provider = _provider_for(name)
        except ReclaunchError as exc:   # no journal, or a damaged one: find what runs anyway
            provider = provider_without_journal(name, spec_path, backend, exc)
        provider.down(name, keep_storage=keep_storage, yes=yes, backend=backend)


def shell_provider(name: str):
    """The provider of `name`, if it can exec into and forward from its ranks."""
    from reclaunch.providers import Shell

    provider = provider_for(name)
    if not isinstance(provider, Shell):
        raise UsageError(f"{name} is a {provider.name} cluster: exec and port-forward are not "
                         "supported there")
    return provider
