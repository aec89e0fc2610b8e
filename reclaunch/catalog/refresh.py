"""`reclaunch catalog refresh`: re-price catalog rows from the clouds' live price APIs.

Cloud-neutral. Each cloud's fetcher lives in `reclaunch/providers/<cloud>/pricing.py`; the
caller passes them in (`reclaunch.providers.price_fetchers()` loads each on first use, so no
SDK is imported before its cloud is refreshed). A fetcher gets the old rows
of its cloud and returns a Fetch: one Quote per row it could price, one message per row it
could not. It raises ProviderError when the whole cloud is unreachable.

Rows that fail keep their old prices and dates; the report says which and why. New rows go
to the user overlay (`~/.reclaunch/catalog/instances.csv`), never into the bundled data.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from reclaunch.catalog import (Catalog, Offer, load_catalog, offers, read_overlay, user_overlay_dir,
                               write_rows)
from reclaunch import host
from reclaunch.errors import ReclaunchError, UsageError

PRICE_FIELDS = ("on_demand_usd", "spot_usd", "spot_low_usd", "spot_high_usd")
# A GCP price composed from the wrong per-GPU SKU comes out about half the truth (SkyPilot v8:
# a3-highgpu-8g 43.07 instead of 88.49). Real moves happen too (AWS June 2025 cut, GCP A3 spot
# x2.5), so a big move is flagged for a human, not refused.
SUSPICIOUS_PCT = 40.0

Key = tuple[str, str, str]


@dataclass(frozen=True)
class Quote:
    """Prices a fetcher found for one row. None = that price was not returned (old one kept)."""

    on_demand_usd: float | None = None
    spot_usd: float | None = None
    spot_low_usd: float | None = None
    spot_high_usd: float | None = None
    source: str = ""     # e.g. "AWS Price List API"; refresh appends the date
    note: str = ""       # e.g. "spot: median of 6 AZs"

    def empty(self) -> bool:
        return all(getattr(self, f) is None for f in PRICE_FIELDS)


@dataclass
class Fetch:
    quotes: dict[Key, Quote] = field(default_factory=dict)
    failures: dict[Key, str] = field(default_factory=dict)


Fetcher = Callable[[list[Offer]], Fetch]


@dataclass(frozen=True)
class FieldChange:
    field: str
    old: float | None
    new: float | None

    @property
    def pct(self) -> float | None:
        if self.old in (None, 0) or self.new is None:
            return None
        return (self.new - self.old) / self.old * 100.0

    @property
    def changed(self) -> bool:
        if self.old is None or self.new is None:
            return self.old is not self.new
        return abs(self.new - self.old) > 1e-6


@dataclass(frozen=True)
class RowDiff:
    old: Offer
    new: Offer
    changes: tuple[FieldChange, ...]
    suspicious: bool
    note: str = ""

    @property
    def key(self) -> Key:
        return self.old.key

    @property
    def changed(self) -> bool:
        return any(c.changed for c in self.changes)


@dataclass(frozen=True)
class Failure:
    cloud: str
    message: str
    key: Key | None = None   # None: the whole cloud failed

    def __str__(self) -> str:
        where = self.cloud if self.key is None else "/".join(self.key)
        return f"{where}: {self.message}"


@dataclass
class RefreshReport:
    today: _dt.date
    dry_run: bool
    diffs: list[RowDiff] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    written: Path | None = None
    overlay_path: Path | None = None

    @property
    def changed(self) -> list[RowDiff]:
        return [d for d in self.diffs if d.changed]

    @property
    def suspicious(self) -> list[RowDiff]:
        return [d for d in self.diffs if d.suspicious]

    @property
    def exit_code(self) -> int:
        """0 all rows refreshed; 1 some row or cloud failed (its old prices were kept), or
        nothing was fetched at all (a refresh that refreshed nothing is not a success)."""
        return 1 if self.failures or not self.diffs else 0

    def to_dict(self) -> dict:
        return {
            "today": self.today.isoformat(), "dry_run": self.dry_run,
            "written": str(self.written) if self.written else None,
            "rows": [{
                "cloud": d.key[0], "instance_type": d.key[1], "region": d.key[2],
                "suspicious": d.suspicious, "note": d.note, "source": d.new.source,
                "changes": {c.field: {"old": c.old, "new": c.new, "pct": c.pct}
                            for c in d.changes},
            } for d in self.diffs],
            "failures": [{"cloud": f.cloud, "key": list(f.key) if f.key else None,
                          "message": f.message} for f in self.failures],
        }


def _merge(old: Offer, q: Quote, today: _dt.date) -> tuple[Offer, str]:
    """New row: fetched prices where returned, old ones (named in the note) where not."""
    from reclaunch.catalog.overlay import PRICE_MAX, PRICE_MIN

    vals, kept, absurd = {}, [], []
    for f in PRICE_FIELDS:
        new = getattr(q, f)
        if new is not None and not PRICE_MIN <= float(new) <= PRICE_MAX:
            # The overlay reader refuses such a row whole (a unit slip, a test double's
            # placeholder): never write it; keep the old figure and say so.
            absurd.append(f"{f} {float(new):g}")
            new = None
        if new is None and getattr(old, f) is not None:
            kept.append(f)
            new = getattr(old, f)
        vals[f] = None if new is None else round(float(new), 6)
    source = f"{q.source} {today.isoformat()}".strip()
    notes = [q.note] if q.note else []
    if old.purchase != "on-demand" and old.on_demand_usd is None and vals["on_demand_usd"] is not None:
        # Not sold on demand (GCP a3-highgpu-1g: Spot or Flex-start only): a billing API's
        # on-demand SKU sum is a price nobody can pay, so it must not price the row.
        vals["on_demand_usd"] = None
        notes.append(f"sold as {old.purchase} only: the fetched on-demand price is not used")
    if absurd:
        notes.append(f"outside {PRICE_MIN:g}..{PRICE_MAX:g} USD/h, not used: " + ", ".join(absurd))
    if kept:
        notes.append(f"not returned, kept from {old.price_as_of.isoformat()}: "
                     + ", ".join(kept))
    if notes:
        source += "; " + "; ".join(notes)
    return replace(old, **vals, price_as_of=today, source=source, origin="overlay"), "; ".join(notes)


def diff_rows(old: Offer, new: Offer, note: str = "",
              suspicious_pct: float = SUSPICIOUS_PCT) -> RowDiff:
    changes = tuple(FieldChange(f, getattr(old, f), getattr(new, f)) for f in PRICE_FIELDS)
    suspicious = any(c.pct is not None and abs(c.pct) > suspicious_pct
                     for c in changes if c.field in ("on_demand_usd", "spot_usd"))
    return RowDiff(old, new, changes, suspicious, note)


def _read_overlay(path: Path) -> dict[Key, Offer]:
    return {o.key: o for o in read_overlay(path) or ()}


def select_rows(catalog: Catalog, clouds: Iterable[str] | None = None,
                region: str | None = None, instance: str | None = None,
                known: Mapping[str, Any] | None = None) -> list[Offer]:
    clouds = list(clouds) if clouds else None
    for c in clouds or ():
        if known is not None and c not in known:
            raise UsageError(f"unknown cloud {c!r}", hint=f"one of {', '.join(sorted(known.keys()))}")
    rows = [o for o in offers(catalog, region=region, instance_type=instance)
            if clouds is None or o.cloud in clouds]
    if not rows:
        what = ", ".join(f"{k} {v}" for k, v in (("cloud", ",".join(clouds or [])),
                                                  ("region", region), ("instance", instance)) if v)
        raise UsageError(f"no catalog rows match {what or 'the filters'}",
                         hint="see 'reclaunch catalog'")
    return rows


def refresh(catalog: Catalog | None = None, clouds: Iterable[str] | str | None = None,
            region: str | None = None, instance: str | None = None, dry_run: bool = True, *,
            today: _dt.date | None = None, overlay_dir: Path | None = None,
            fetchers: Mapping[str, Fetcher],
            suspicious_pct: float = SUSPICIOUS_PCT) -> RefreshReport:
    """Re-price the catalog rows matching the filters; write the overlay unless dry_run.

    `fetchers` maps a cloud to its price fetcher (reclaunch.providers.price_fetchers() loads
    each cloud's on first use; tests pass stubbed clients this way).
    Raises UsageError for filters that match nothing; every cloud failure is in the report.
    """
    catalog = catalog if catalog is not None else load_catalog()
    if isinstance(clouds, str):
        clouds = [clouds]
    today = today or host.today()
    report = RefreshReport(today=today, dry_run=dry_run)
    rows = select_rows(catalog, clouds or [c for c in fetchers.keys()], region, instance, fetchers)

    by_cloud: dict[str, list[Offer]] = {}
    for o in rows:
        by_cloud.setdefault(o.cloud, []).append(o)

    new_rows: dict[Key, Offer] = {}
    for cloud, old_rows in sorted(by_cloud.items()):
        try:
            fetch = fetchers[cloud]
            got = fetch(old_rows)
        except ReclaunchError as exc:
            report.failures.append(Failure(cloud, str(exc)))
            continue
        except Exception as exc:  # a fetcher bug must not lose the other clouds' prices
            report.failures.append(Failure(cloud, f"{type(exc).__name__}: {exc}"))
            continue
        for old in old_rows:
            q = got.quotes.get(old.key)
            if q is None or q.empty():
                msg = got.failures.get(old.key) or "no price returned"
                report.failures.append(Failure(cloud, msg, old.key))
                continue
            new, note = _merge(old, q, today)
            new_rows[old.key] = new
            report.diffs.append(diff_rows(old, new, note, suspicious_pct))

    report.overlay_path = (overlay_dir or user_overlay_dir()) / "instances.csv"
    if not dry_run and new_rows:
        merged = _read_overlay(report.overlay_path)
        merged.update(new_rows)
        write_rows(report.overlay_path, list(merged.values()))
        report.written = report.overlay_path
    return report
