"""Which target holds a cluster name, with or without a journal.

A name is one cluster until it is down: `up` of a spec whose name a live cluster on another
target (or region) already holds is refused, naming that cluster, instead of overwriting its
journal record and leaving it unmanageable. And when the journal is lost or damaged, `down`
and `status` still find what runs: each provider may answer `holds(name)` from its own
state (cloud: local from its state directory), and a cloud provider may `adopt` the cluster
again from its spec file (the record rebuilt; teardown then verifies by the tag sweep).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reclaunch.errors import ReclaunchError

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan


class NameTakenError(ReclaunchError):
    exit_code = 1


def _providers() -> list[Any]:
    from reclaunch.providers import REGISTRY, get
    return [get(cloud) for cloud in REGISTRY]


def holders(name: str) -> list[tuple[str, str | None, str]]:
    """(cloud, region, description) of every live cluster called `name`."""
    out = []
    for p in _providers():
        if h := p.holds(name):
            out.append(h)
    return out


def refuse_taken_name(plan: "Plan") -> None:
    here = (plan.cloud, plan.region or None)
    for cloud, region, what in holders(plan.name):
        if (cloud, region or None) != here:
            raise NameTakenError(
                f"the name {plan.name!r} is already taken by {what}; a name is one cluster "
                f"until it is down, so this {plan.cloud} cluster was not started",
                hint=f"`reclaunch down {plan.name}` first, or give this spec another name")


def names_without_journal() -> list[str]:
    """Clusters a provider still holds although no journal names them (lost journal)."""
    out: set[str] = set()
    from reclaunch.providers import ListsClusters
    for p in _providers():
        if isinstance(p, ListsClusters):
            out.update(p.names())
    return sorted(out)


def provider_without_journal(name: str, spec_path: str | None, backend: str | None,
                             exc: ReclaunchError):
    """The provider to stop `name` with when its journal is lost or damaged, or raise `exc`
    with what to do instead."""
    held = holders(name)
    if held:
        from reclaunch.providers import get
        return get(held[0][0])
    if spec_path:
        from reclaunch.providers import get
        from reclaunch.spec import load_spec
        from reclaunch.providers import Adoptable
        p = get(load_spec(spec_path).cloud)
        if isinstance(p, Adoptable):
            p.adopt(spec_path, backend)
            return p
    more = (f"if it ran on a cloud, `reclaunch down FILE` rebuilds its record from the spec, "
            f"and `reclaunch gc --cloud CLOUD --region REGION --cluster {name} --yes` finds it "
            "by its tags")
    # provider_for already tried this once for callers that retry here: say it once.
    if more not in (exc.hint or ""):
        exc.hint = f"{exc.hint}; {more}" if exc.hint else more
    raise exc
