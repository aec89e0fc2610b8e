"""The user's price overlay (`$RECLAUNCH_HOME/catalog/instances.csv`, written by `catalog
refresh`), read row by row with every row checked before it can replace a bundled one.

A hand edit, a torn write or a future column order must never stop planning or leak into a
price: a row that is short, has a non-number, NaN/inf, a negative price, zero GPUs or a GPU
the catalog does not know is skipped with a warning that names `file:line`, and the bundled
row for that (cloud, instance_type, region) stays in force.
"""

from __future__ import annotations

import csv
import math
import sys
from dataclasses import fields
from functools import lru_cache
from operator import attrgetter
from pathlib import Path
from typing import Callable, Iterable

from reclaunch import clouds

MAX_BYTES = 16 << 20   # the bundled catalog is ~100 KB; a refresh of every region stays far below

_warned: set[str] = set()   # one warning per bad row per process (load_catalog runs often)


def warn_once(line: str, out=None) -> None:
    if line in _warned:
        return
    _warned.add(line)
    print(f"warning: {line}", file=out or sys.stderr)


@lru_cache(maxsize=8)
def _fields_of(cls: type) -> tuple[tuple[str, ...], Callable]:
    names = tuple(f.name for f in fields(cls))
    return names, attrgetter(*names)


@lru_cache(maxsize=4)
def _registry(generation: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(clouds that sell instances, fabric names), read once per registry generation: an
    overlay of a full refresh checks ~700 rows against them (the dicts were made per row)."""
    return clouds.kube_names(), tuple(clouds.fabrics())


def check_offer(offer, known_gpus: Iterable[str]) -> str | None:
    """What is wrong with a parsed overlay row, or None. Every number is finite and >= 0."""
    names, values = _fields_of(type(offer))
    for name, v in zip(names, values(offer)):
        if isinstance(v, float):
            if not math.isfinite(v):
                return f"{name}: {v} is not a number"
            if v < 0:
                return f"{name}: {v} is negative"
        elif isinstance(v, int) and not isinstance(v, bool) and v < 0:
            return f"{name}: {v} is negative"
    priced, fabrics = _registry(clouds.generation())
    if offer.cloud not in priced:   # the clouds that sell instances
        return f"cloud: {offer.cloud!r} is not one of {', '.join(priced)}"
    if offer.fabric not in fabrics:
        return f"fabric: {offer.fabric!r} is not one of {', '.join(fabrics)}"
    if not offer.instance_type.strip() or not offer.region.strip():
        return "instance_type and region must not be empty"
    if offer.gpu_count < 1:
        return f"gpu_count: {offer.gpu_count} (a GPU instance has at least one)"
    if offer.gpu not in (known_gpus if isinstance(known_gpus, (set, frozenset)) else set(known_gpus)):
        return f"gpu: {offer.gpu!r} is not a GPU the catalog knows"
    if offer.on_demand_usd is None and offer.spot_usd is None:
        return "no price (on_demand_usd and spot_usd are both empty)"
    for col in ("on_demand_usd", "spot_usd"):
        if getattr(offer, col) == 0:
            return f"{col}: 0 (a free GPU instance is a broken row)"
    for col in PRICE_COLUMNS:   # 1e-300 or 1e300 is a unit slip or a broken writer
        v = getattr(offer, col, None)
        if v is not None and not PRICE_MIN <= v <= PRICE_MAX:
            return f"{col}: {v:g} USD/hour is outside {PRICE_MIN:g}..{PRICE_MAX:g}"
    for col, (lo, hi) in BOUNDS.items():
        v = getattr(offer, col)
        if not lo <= v <= hi:
            return f"{col}: {v:g} is outside {lo:g}..{hi:g}"
    if len(offer.source) > 1000:
        return f"source: {len(offer.source)} characters (a URL or a file name is far shorter)"
    return None


# USD per instance-hour. The bundled catalog spans $1.62 (spot) to $127.82 (on-demand) as of
# its snapshot (data/instances.csv); these bounds leave two orders of magnitude either side.
PRICE_MIN, PRICE_MAX = 0.01, 5000.0
PRICE_COLUMNS = ("on_demand_usd", "spot_usd", "spot_low_usd", "spot_high_usd", "purchase_usd")
BOUNDS = {"gpu_count": (1, 64), "gpu_memory_gib": (1, 1024), "vcpus": (1, 4096),
          "ram_gib": (1, 65536), "nics": (0, 64), "network_gbps": (0, 100_000)}
FAR = 10.0   # an overlay price this many times off the bundled one is flagged


def far_from_bundled(offer, bundled) -> str | None:
    """A warning when a refreshed price is more than FAR times off the bundled one (kept:
    prices do move, but a unit slip should not pass unnoticed)."""
    for col in ("on_demand_usd", "spot_usd"):
        new, old = getattr(offer, col), getattr(bundled, col)
        if new and old and not old / FAR <= new <= old * FAR:
            return (f"{offer.cloud} {offer.instance_type} {offer.region}: overlay {col} "
                    f"{new:g} is more than {FAR:g}x off the bundled {old:g}; check the overlay")
    return None


def read_overlay(path: Path, parse: Callable, known_gpus: Iterable[str],
                 warn: Callable[[str], None] = warn_once, row_parser: Callable | None = None):
    """-> the overlay's good rows (each passed through `parse`), or None without a file.
    Bad rows are left out with one `warning: FILE:LINE: why` each. `row_parser(header)`, if
    given, may return a parser of whole csv rows that makes what `parse` makes of their dict
    (catalog/reader.row_parser: a refresh of every region is ~700 rows, read by every plan)."""
    path = Path(path)
    try:
        if not path.is_file():
            return None
        with path.open("rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        warn(f"{path}: cannot read the price overlay ({exc.strerror or exc}); using bundled prices")
        return None
    if len(raw) > MAX_BYTES:
        warn(f"{path}: larger than {MAX_BYTES} bytes, not a catalog; using bundled prices")
        return None
    text = raw.decode("utf-8", "replace")
    gpus = set(known_gpus)
    reader = csv.reader(text.splitlines())
    out = []
    header: list[str] | None = None
    fast = None
    try:
        for row in reader:
            line = reader.line_num
            if not any(c.strip() for c in row):
                continue
            if header is None:
                header = [c.strip() for c in row]
                missing = [c for c in _required() if c not in header]
                if missing:
                    warn(f"{path}:{line}: header lacks {', '.join(missing)}; "
                         "ignoring the overlay (bundled prices serve)")
                    return None
                fast = row_parser(header) if row_parser else None
                continue
            if len(row) != len(header):
                warn(f"{path}:{line}: {len(row)} fields, the header has {len(header)}; "
                     "row skipped (bundled row used)")
                continue
            try:
                offer = fast(row) if fast else parse(dict(zip(header, row)), origin="overlay")
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                warn(f"{path}:{line}: {_why(exc)}; row skipped (bundled row used)")
                continue
            problem = check_offer(offer, gpus)
            if problem:
                warn(f"{path}:{line}: {problem}; row skipped (bundled row used)")
                continue
            out.append(offer)
    except csv.Error as exc:
        warn(f"{path}:{reader.line_num}: {exc}; rows from here on ignored")
    return out


def _required() -> tuple[str, ...]:
    from reclaunch.catalog import INSTANCE_COLUMNS
    return INSTANCE_COLUMNS


def _why(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"missing column {exc.args[0]}"
    return " ".join(str(exc).split())[:160] or type(exc).__name__
