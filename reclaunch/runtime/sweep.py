"""Orphan sweep behind `reclaunch gc`: the safety net for a lost or corrupted Pulumi state.

Every resource reclaunch creates carries `reclaunch-managed=true` and
`reclaunch-cluster=<name>` (tags on AWS/Azure, labels on GCP). The sweep finds them through
the clouds' own APIs, never through Pulumi state, and:

    list  ->  show (with hourly cost)  ->  delete in dependency order, retrying transient
    failures with backoff  ->  verify each is gone  ->  report

This module is cloud-neutral. Each cloud is one `Sweeper` in `reclaunch/providers/*_sweep.py`,
declared in its CloudSpec and built by `reclaunch.providers.sweeper_for` (imported lazily:
boto3 & co. stay out of CLI start-up).

Safety: a resource is only touched when `reclaunch-managed=true` and, when a cluster is named,
`reclaunch-cluster=<name>`. Sweepers filter on that, and `sweep()` re-reads the tags right
before each delete, so a resource re-tagged (or re-used) since listing is left alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Protocol

from reclaunch.errors import ProviderError, UsageError
# The endpoint's limits (connect, read, attempts, a total deadline per call) and the error for
# one that stopped answering are every network call's (runtime/deadline.py).
from reclaunch.runtime.deadline import (SDK_ATTEMPTS, SDK_CALL_S, SDK_CONNECT_S,  # noqa: F401
                                        SDK_READ_S, UnreachableError, endpoint, sdk_limits,
                                        within)
from reclaunch.tags import CLUSTER_TAG, MANAGED_TAG

HOURS_PER_MONTH = 730  # the clouds' own convention for turning monthly prices into hourly

class TransientError(ProviderError):
    """A failure worth retrying (throttling, dependency still going away, 409/429/5xx)."""


@dataclass
class Orphan:
    """One cloud resource the sweep found. `rank` orders deletion: lower goes first."""

    cloud: str
    region: str
    kind: str
    id: str
    name: str
    cluster: str
    hourly_usd: float | None = None  # None: price unknown
    rank: int = 0
    details: dict[str, Any] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.kind} {self.name or self.id}" + (
            f" ({self.id})" if self.name and self.name != self.id else "")


class Sweeper(Protocol):
    cloud: str
    region: str

    def list(self, cluster: str | None = None) -> list[Orphan]: ...

    def tags(self, orphan: Orphan) -> dict[str, str] | None:
        """Current tags/labels, or None when the resource is gone (or going)."""

    def delete(self, orphan: Orphan) -> None:
        """Start deleting; idempotent (gone already is fine). Raise TransientError to retry."""

    def exists(self, orphan: Orphan) -> bool:
        """True while the resource is still there and not being deleted."""


def is_ours(tags: dict[str, str] | None, cluster: str | None = None) -> bool:
    """The one ownership rule, shared by every sweeper."""
    if not tags or str(tags.get(MANAGED_TAG, "")).lower() != "true":
        return False
    if not tags.get(CLUSTER_TAG):
        return False
    return cluster is None or tags.get(CLUSTER_TAG) == cluster


# ---- cost ------------------------------------------------------------------------------

def instance_hourly(cloud: str, instance_type: str, region: str, *, spot: bool = False,
                    catalog=None) -> float | None:
    """Catalog price of one instance-hour; the same type in another region as a fallback,
    None when the catalog does not know the type."""
    from reclaunch.catalog import offers

    cat = catalog if catalog is not None else _catalog()
    rows = offers(cat, cloud=cloud, instance_type=instance_type, region=region) or \
        offers(cat, cloud=cloud, instance_type=instance_type)
    for o in rows:
        price = (o.spot_usd if spot else None) or o.on_demand_usd
        if price is not None:
            return float(price)
    return None


_CATALOG = None


def _catalog():
    global _CATALOG
    if _CATALOG is None:
        from reclaunch.catalog import load_catalog
        _CATALOG = load_catalog()
    return _CATALOG


def storage_hourly(size_gb: float | None, usd_per_gb_month: float | None) -> float | None:
    if size_gb is None or usd_per_gb_month is None:
        return None
    return float(size_gb) * usd_per_gb_month / HOURS_PER_MONTH


def total_hourly(orphans: Iterable[Orphan]) -> float:
    return sum(o.hourly_usd or 0.0 for o in orphans)


# ---- the sweep -------------------------------------------------------------------------

@dataclass
class Failure:
    orphan: Orphan
    reason: str


@dataclass
class SweepReport:
    cloud: str
    region: str
    cluster: str | None
    found: list[Orphan] = field(default_factory=list)
    deleted: list[Orphan] = field(default_factory=list)
    skipped: list[Failure] = field(default_factory=list)   # tags changed since listing
    failed: list[Failure] = field(default_factory=list)
    still_present: list[Orphan] = field(default_factory=list)
    dry_run: bool = True
    list_errors: list[str] = field(default_factory=list)  # kinds that could not be listed
    # Deletes the cloud accepted that could not be verified (the endpoint stopped answering).
    unverified: list[Orphan] = field(default_factory=list)
    unreachable: str | None = None   # why the sweep stopped calling the endpoint

    @property
    def ok(self) -> bool:
        return not (self.failed or self.still_present or self.list_errors or self.unverified)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    @property
    def hourly_usd(self) -> float:
        return total_hourly(self.found)

    def render(self) -> str:
        """Human-readable report, the text `reclaunch gc` prints."""
        scope = f"cluster {self.cluster}" if self.cluster else "all reclaunch clusters"
        lines = [f"{self.cloud} {self.region}: {len(self.found)} orphaned resource(s) "
                 f"for {scope}, ~${self.hourly_usd:,.2f}/h"]
        lines += format_orphans(self.found)
        lines += [f"  NOT LISTED {e} (check by hand: the sweep could not see these)"
                  for e in self.list_errors]
        if self.dry_run:
            if self.found:
                lines.append("dry run: nothing deleted (pass --yes to remove them)")
            return "\n".join(lines)
        accepted = len(self.deleted) + len(self.unverified)
        lines.append(f"deleted {accepted}" + (f" ({len(self.unverified)} accepted but not "
                     "verified gone)" if self.unverified else "") + f", failed {len(self.failed)}, "
                     f"skipped {len(self.skipped)}, still present {len(self.still_present)}")
        if self.unreachable:
            lines.append(f"  the endpoint stopped answering ({self.unreachable}); rerun "
                         "`reclaunch gc` to finish and verify")
        lines += [f"  UNVERIFIED {o.label}: delete accepted" for o in self.unverified]
        lines += [f"  FAILED  {f.orphan.label}: {f.reason}" for f in self.failed]
        lines += [f"  SKIPPED {f.orphan.label}: {f.reason}" for f in self.skipped]
        lines += [f"  PRESENT {o.label}" for o in self.still_present]
        from reclaunch.ui.text import visible
        return "\n".join(visible(ln, keep_newlines=False, limit=2000) for ln in lines)


def format_orphans(orphans: Iterable[Orphan]) -> list[str]:
    from reclaunch.ui.text import visible   # names and tags are anyone's text: no escapes pass

    def cell(v: object) -> str:
        return visible(v, keep_newlines=False, limit=120)
    rows = [(cell(o.cluster), cell(o.kind), cell(o.name or o.id), cell(o.id), cell(o.region),
             "?" if o.hourly_usd is None else f"${o.hourly_usd:,.4f}/h") for o in orphans]
    if not rows:
        return []
    head = ("CLUSTER", "KIND", "NAME", "ID", "REGION", "COST")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    fmt = "  " + "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*head).rstrip()] + [fmt.format(*r).rstrip() for r in rows]


def _retry(fn: Callable[[], Any], *, attempts: int, backoff: float,
           sleep: Callable[[float], None]) -> Any:
    """Call fn, retrying TransientError with exponential backoff (backoff, 2x, 4x ... 60 s)."""
    for i in range(attempts):
        try:
            return fn()
        except TransientError:
            if i == attempts - 1:
                raise
            sleep(min(backoff * 2 ** i, 60.0))


def sweep(sweeper: Sweeper, cluster: str | None = None, *, delete: bool = False,
          attempts: int = 5, backoff: float = 2.0, verify_attempts: int = 5,
          sleep: Callable[[float], None] = time.sleep,
          progress: Callable[[str], None] | None = None) -> SweepReport:
    """List (and with delete=True remove) the orphans `sweeper` finds for `cluster`.

    Deletion goes rank by rank (dependents first). Within a rank, each delete is retried on
    TransientError up to `attempts` times; anything else fails that resource at once. After
    deleting, each resource is polled (up to `verify_attempts`) until `exists()` is false.
    Once the endpoint is unreachable nothing more is sent: the rest is reported not attempted,
    and accepted deletes that cannot be checked are counted as deleted but unverified.
    """
    say = progress or (lambda msg: None)
    report = SweepReport(sweeper.cloud, sweeper.region, cluster, dry_run=not delete)
    say(f"listing {sweeper.cloud} {sweeper.region} resources tagged {MANAGED_TAG}=true"
        + (f", {CLUSTER_TAG}={cluster}" if cluster else "") + " ...")
    if hasattr(sweeper, "progress"):
        sweeper.progress = say
    found = [o for o in sweeper.list(cluster) if is_ours(o.tags, cluster)]
    report.list_errors = list(getattr(sweeper, "list_errors", []))
    report.found = sorted(found, key=lambda o: (o.rank, o.kind, o.name, o.id))
    say(f"found {len(report.found)}")
    if not delete:
        return report

    attempted: list[Orphan] = []
    for n, o in enumerate(report.found, 1):
        if report.unreachable:
            report.failed.append(Failure(o, f"not attempted: {report.unreachable}"))
            continue
        say(f"deleting {n}/{len(report.found)}: {o.label}")
        try:
            current = _retry(lambda: sweeper.tags(o), attempts=attempts, backoff=backoff,
                             sleep=sleep)
            if current is None:  # gone already (e.g. an ASG took its instances along)
                report.deleted.append(o)
                continue
            if not is_ours(current, o.cluster if cluster is None else cluster):
                report.skipped.append(Failure(o, "tags changed since listing; left alone"))
                continue
            _retry(lambda: sweeper.delete(o), attempts=attempts, backoff=backoff, sleep=sleep)
            attempted.append(o)
        except UnreachableError as exc:
            report.unreachable = exc.message
            report.failed.append(Failure(o, str(exc)))
        except ProviderError as exc:
            report.failed.append(Failure(o, str(exc)))
        except Exception as exc:  # an SDK error a sweeper did not translate: report it
            report.failed.append(Failure(o, f"{type(exc).__name__}: {exc}"))

    # Verify: everything we tried (and everything that failed) is checked against the cloud.
    pending = list(attempted)
    if pending:
        say(f"verifying {len(pending)} deletion(s) ...")
    for i in range(verify_attempts):
        if report.unreachable:
            break
        pending = [o for o in pending if _exists(sweeper, o, report)]
        if not pending:
            break
        if i < verify_attempts - 1:
            sleep(min(backoff * 2 ** i, 30.0))
    if report.unreachable:   # accepted by the cloud, but nobody can say they are gone
        report.unverified = pending
        pending = []
    report.deleted += [o for o in attempted if o not in pending and o not in report.unverified]
    report.still_present = pending + [f.orphan for f in report.failed
                                      if not report.unreachable and _exists(sweeper, f.orphan, report)]
    return report


def _exists(sweeper: Sweeper, o: Orphan, report: SweepReport | None = None) -> bool:
    if report is not None and report.unreachable:
        return True
    try:
        return sweeper.exists(o)
    except UnreachableError as exc:
        if report is not None:
            report.unreachable = exc.message
        return True
    except Exception:
        return True  # cannot prove it is gone: say so
