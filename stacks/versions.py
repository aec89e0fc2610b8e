"""Which Kubernetes minor a cluster is created with, and the add-on pins that follow from it.

Pure (no Pulumi, no network): `up` hands the cloud's own answer in as the stack config
`reclaunch:kubernetesVersion` (reclaunch/providers/versions.py asks the cloud); `preview`
and every run without that config use the stack's dated table (StackFacts.kubernetes_minors,
in stacks/<cloud>/). Either
way the minor is the newest one the cloud offers inside every installed add-on's
`kubernetes: {min, max}` range (k8s/addons.yaml), so no pinned add-on meets a control plane
its vendor does not support.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any, Iterable

from stacks import common as c

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

CONFIG_KEY = "kubernetesVersion"      # reclaunch:kubernetesVersion


def minor_key(v: str) -> tuple[int, int]:
    """(1, 35) from "1.35", "1.35.3", "v1.35.3-gke.1200000" or "1.35-eks-3"."""
    parts = str(v).lstrip("v").replace("-", ".").split(".")
    return int(parts[0]), int(parts[1])


def minor(v: str) -> str:
    major, mnr = minor_key(v)
    return f"{major}.{mnr}"


def table(cloud: str) -> dict[str, Any] | None:
    """The cloud's dated table of minors (its stack's kubernetes_minors); None: no stack."""
    import stacks

    pkg = stacks.facts(cloud)
    return pkg.kubernetes_minors() if pkg else None


def where(cloud: str) -> str:
    """How a message names the dated table."""
    import stacks

    return f"the dated table of {stacks.package_name(cloud)} (as of {table(cloud)['as_of']})"


def bounds(plan: "Plan") -> list[tuple[str, str | None, str | None]]:
    """(add-on, min, max) for every add-on this cluster installs or relies on."""
    return [(a["name"], (a.get("kubernetes") or {}).get("min"),
             (a.get("kubernetes") or {}).get("max"))
            for a in c.addons_for(plan, include_managed=True) if a.get("kubernetes")]


def allowed(plan: "Plan", v: str) -> list[str]:
    """Why minor `v` does not suit this cluster's add-ons ([] = it does)."""
    out = []
    for addon, lo, hi in bounds(plan):
        if (lo and minor_key(v) < minor_key(lo)) or (hi and minor_key(v) > minor_key(hi)):
            out.append(f"{addon} supports {lo or '?'}..{hi or '?'}")
    return out


def choose(plan: "Plan", offered: Iterable[str], *, where: str) -> str:
    """The newest offered minor every add-on supports. `where` names the source of `offered`
    in the error when none fits (a person must bump a pin in k8s/addons.yaml)."""
    from reclaunch.errors import ProviderError

    minors = sorted({minor(v) for v in offered}, key=minor_key, reverse=True)
    for v in minors:
        if not allowed(plan, v):
            return v
    why = "; ".join(sorted({w for v in minors for w in allowed(plan, v)}))
    raise ProviderError(
        f"no Kubernetes version fits: {where} offers {', '.join(minors) or 'none'}, "
        f"and the pinned add-ons need: {why or 'nothing'}",
        hint=f"bump the add-on pins in {c.ADDONS_FILE} to releases that support "
             f"{minors[0] if minors else 'a current minor'}")


def fallback_minors(cloud: str, on: dt.date | None = None) -> list[str]:
    """The table's minors for `cloud` still in standard support on `on` (the table's own date
    when None, so a preview never depends on today's clock)."""
    doc = table(cloud) or {"as_of": None, "minors": []}
    day = on or doc["as_of"]
    return [str(r["minor"]) for r in doc["minors"] if r["end"] > day]


def fallback(plan: "Plan", on: dt.date | None = None) -> str:
    return choose(plan, fallback_minors(plan.cloud, on), where=where(plan.cloud))


def held_back(plan: "Plan", chosen: str, offered: Iterable[str]) -> list[str]:
    """What a person should know when the cluster gets an older minor than the cloud offers
    because an add-on's `kubernetes.max` stops there: the add-on and its pin, and when the
    cloud's standard support for that minor ends (the dated table's row, with its source)."""
    newest = max((minor(v) for v in offered), key=minor_key, default=chosen)
    if minor_key(newest) <= minor_key(chosen):
        return []
    pins = {a["name"]: a for a in c.addons_for(plan, include_managed=True)}
    blockers = [" ".join(filter(None, (name, str(pins[name].get("version") or "")))) +
                f" supports at most {hi} ({pins[name].get('source') or c.ADDONS_FILE.name})"
                for name, _, hi in bounds(plan) if hi and minor_key(hi) < minor_key(newest)]
    rows = table(plan.cloud) or {}
    end = next((r["end"] for r in rows.get("minors", []) if str(r["minor"]) == chosen), None)
    support = (f"; standard support for {chosen} ends {end} ({rows.get('source')}): a cluster "
               "that must outlive that date needs a release of it that supports a newer "
               "minor, pinned in k8s/addons.yaml" if end else "")
    return [f"Kubernetes {chosen}, not {newest} (the newest offered): "
            f"{'; '.join(blockers)}{support}"]


def person_lines(plan: "Plan") -> list[str]:
    """held_back() for the minor the dated table gives: `up --dry-run` and `up` list it with
    what needs a person, and `up` warns the same of the cloud's own answer
    (reclaunch/providers/versions.py)."""
    if table(plan.cloud) is None:
        return []
    offered = fallback_minors(plan.cloud)
    try:
        return held_back(plan, fallback(plan), offered)
    except Exception:  # noqa: BLE001 - no minor fits: `up` stops on that with its own message
        return []


def kubernetes_version(plan: "Plan") -> str:
    """What the program creates: the minor `up` resolved from the cloud, else the table's."""
    try:
        import pulumi

        found = pulumi.Config("reclaunch").get(CONFIG_KEY)
    except Exception:  # noqa: BLE001 - outside an engine run there is no config
        found = None
    return minor(found) if found else fallback(plan)


def pinned_facts(addon: dict[str, Any], version: str) -> dict[str, Any]:
    """Facts of an add-on that follow the cluster minor (image_by_minor -> image_tag)."""
    by_minor = addon.get("image_by_minor") or {}
    if not by_minor:
        return {}
    tag = by_minor.get(minor(version))
    if tag is None:   # choose() keeps the minor inside `kubernetes:`; the table must cover it
        raise ValueError(f"{addon['name']}: no image for Kubernetes {version} in "
                         f"image_by_minor ({c.ADDONS_FILE})")
    return {"image_tag": tag}
