"""The Kubernetes minor for a new cluster, asked of the cloud at `up` time.

Each cloud's `versions.offered(plan)` makes the cloud's own "supported versions" call
(providers/<cloud>/versions.py); `resolve` picks the newest offered minor inside every
pinned add-on's range (stacks.versions.choose) and hands it to the program as
`reclaunch:kubernetesVersion`. When the call fails (no permission yet, offline), the stack's
dated table (stacks.versions.table) decides, filtered by today's date, and `up` says so. The
pure stages never make this call: `preview` shows the table's choice.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

log = logging.getLogger("reclaunch.versions")


def resolve(plan: "Plan", offered: Callable[["Plan"], list[str]], *, where: str,
            today: Callable[[], dt.date] = dt.date.today) -> dict[str, str]:
    """{"reclaunch:kubernetesVersion": minor}. An add-on conflict with what the cloud offers
    stops `up` (ProviderError naming the pins to bump); a failed call falls back."""
    from stacks import versions

    try:
        answer = offered(plan)
    except Exception as exc:  # noqa: BLE001 - any SDK/CLI failure: the dated table decides
        log.warning("could not ask %s for its Kubernetes versions (%s); using %s",
                    where, str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
                    versions.where(plan.cloud))
        answer = None
    if answer:
        chosen = versions.choose(plan, answer, where=where)
        for line in versions.held_back(plan, chosen, answer):
            log.warning("%s", line)
    else:
        chosen = versions.fallback(plan, on=today())
    return {f"reclaunch:{versions.CONFIG_KEY}": chosen}
