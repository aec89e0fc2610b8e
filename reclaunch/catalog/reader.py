"""Catalog CSV text -> Offers, at start-up speed: `validate` and `plan` read every bundled row
(about 700) before they can answer, so this is on the path of every command that loads a spec.

The values are exactly parse_offer's (tests/catalog/test_reader.py compares every bundled row
and the odd-row fallbacks); what differs is how they are made, each measured on the bundled
catalog (median in-process CPU, 2026-12-01):
- csv.reader rows instead of csv.DictReader (a dict per row): 7 -> 2 ms;
- the instance columns, the same in every region of an instance type, converted once per
  distinct set of values instead of once per row;
- each Offer made by catalog._offer (as parse_offer now is), not its frozen dataclass
  __init__, which sets the 26 fields with one object.__setattr__ call each: 6.2 -> 0.3 ms.
A file whose header is not the full column set, or a row of the wrong length, goes through
csv.DictReader and parse_offer as before (same values, same errors).
"""

from __future__ import annotations

import csv
import datetime as _dt
from operator import itemgetter
from typing import Callable

from reclaunch.catalog import (FACT_COLUMNS, INSTANCE_COLUMNS, Offer, _num, _offer, _read_rows,
                               instance_facts, parse_offer)

_PER_ROW = ("cloud", "instance_type", "region", "on_demand_usd", "spot_usd", "spot_low_usd",
            "spot_high_usd", "price_as_of", "source", "zones", "purchase", "purchase_usd")


def _as_dict(header: list[str], row: list[str]) -> dict:
    """The dict csv.DictReader makes of a row of another length (restkey and restval None)."""
    d: dict = dict(zip(header, row))
    if len(row) > len(header):
        d[None] = row[len(header):]
    for k in header[len(row):]:
        d[k] = None
    return d


def row_parser(header: list[str], origin: str = "bundled") -> Callable[[list[str]], Offer] | None:
    """parse_offer for csv.reader rows of `header`'s length (same values, same first error),
    or None when the header is not exactly the column set (then a dict per row it is)."""
    if sorted(header) != sorted(INSTANCE_COLUMNS):
        return None
    facts_of = itemgetter(*(header.index(c) for c in FACT_COLUMNS))
    per_row = itemgetter(*(header.index(c) for c in _PER_ROW))
    memo: dict[tuple[str, ...], dict] = {}
    dates: dict[str, _dt.date] = {}

    def parse(row: list[str]) -> Offer:
        key = facts_of(row)
        facts = memo.get(key)
        if facts is None:
            facts = memo[key] = instance_facts(key)
        cloud, itype, region, od, spot, low, high, as_of, source, zones, purchase, p_usd = \
            per_row(row)
        od, spot, low, high = _num(od), _num(spot), _num(low), _num(high)   # before the date,
        day = dates.get(as_of)                                               # as parse_offer
        if day is None:
            day = dates[as_of] = _dt.date.fromisoformat(as_of)
        return _offer({
            "cloud": cloud, "instance_type": itype, "region": region, **facts,
            "on_demand_usd": od, "spot_usd": spot, "spot_low_usd": low, "spot_high_usd": high,
            "price_as_of": day, "source": source, "origin": origin, "zones": zones.strip(),
            "purchase": (purchase or "on-demand").strip(), "purchase_usd": _num(p_usd)})

    return parse


def read_offers(text: str, origin: str = "bundled") -> list[Offer]:
    """Every row of a catalog CSV as an Offer, equal to [parse_offer(r, origin) for r in
    _read_rows(text)]."""
    lines = (line for line in text.splitlines() if line.strip())
    rows = csv.reader(lines)
    header = next(rows, None)
    if header is None:
        return []
    parse = row_parser(header, origin)
    if parse is None:   # an older or odd file: the general path
        return [parse_offer(r, origin) for r in _read_rows(text)]
    width = len(header)
    return [parse(row) if len(row) == width else parse_offer(_as_dict(header, row), origin)
            for row in rows]
