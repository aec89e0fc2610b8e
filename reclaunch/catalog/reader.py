"""Catalog CSV text -> Offers: `validate` and `plan` read every bundled row (hundreds)
before they can answer, so this is on the path of every command that loads a spec.

The values are exactly parse_offer's (tests/catalog/test_reader.py compares every bundled row
and the odd-row fallbacks); what differs is the work per row, which is what a CLI call pays:
- csv.reader rows instead of csv.DictReader (a dict per row), and a line with no quote split
  at its commas rather than through the reader's per-character loop (_rows);
- the instance columns, the same in every region of an instance type, converted once per
  distinct set of values instead of once per row.
A file whose header is not the full column set, or a row of the wrong length, goes through
csv.DictReader and parse_offer as before (same values, same errors).
"""

from __future__ import annotations

import csv
import datetime as _dt
from operator import itemgetter
from typing import Callable, Iterable, Iterator

from reclaunch.catalog import (FACT_COLUMNS, INSTANCE_COLUMNS, Offer, _num, _read_rows,
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
    facts_memo: dict[tuple[str, ...], dict] = {}   # per distinct instance facts, converted

    def parse(row: list[str]) -> Offer:
        key = facts_of(row)
        facts = facts_memo.get(key)
        if facts is None:
            facts = facts_memo[key] = instance_facts(key)   # raises before anything is kept
        cloud, itype, region, od, spot, low, high, as_of, source, zones, purchase, p_usd = \
            per_row(row)
        od, spot, low, high = _num(od), _num(spot), _num(low), _num(high)   # before the date,
        day = _dt.date.fromisoformat(as_of)                                  # as parse_offer
        return Offer(cloud=cloud, instance_type=itype, region=region, **facts, on_demand_usd=od,
                     spot_usd=spot, spot_low_usd=low, spot_high_usd=high, price_as_of=day,
                     source=source, origin=origin, zones=zones.strip(),
                     purchase=(purchase or "on-demand").strip(), purchase_usd=_num(p_usd))

    return parse


def _rows(lines: Iterable[str]) -> Iterator[list[str]]:
    """csv.reader(lines), with a line that has no quote split at its commas: in the excel
    dialect, once the text is split into lines, the quote is the only other character the
    reader treats apart, so those are the fields it makes of such a line (about 3x less work
    than the reader's per-character loop). A line with a quote, or one long enough to hold a
    field over csv.field_size_limit(), is read by one csv.reader over the same lines, which
    reads on from them when a quoted field spans lines, just as it would over the whole file."""
    it = iter(lines)
    held: list[str] = []

    def feed() -> Iterator[str]:
        while True:
            if held:
                yield held.pop()
            else:
                line = next(it, None)
                if line is None:
                    return
                yield line

    reader = csv.reader(feed())
    limit = csv.field_size_limit()
    for line in it:
        if '"' in line or len(line) > limit:
            held.append(line)
            yield next(reader)
        else:
            yield line.split(",")


def read_offers(text: str, origin: str = "bundled") -> list[Offer]:
    """Every row of a catalog CSV as an Offer, equal to [parse_offer(r, origin) for r in
    _read_rows(text)]."""
    rows = _rows(line for line in text.splitlines() if line.strip())
    header = next(rows, None)
    if header is None:
        return []
    parse = row_parser(header, origin)
    if parse is None:   # an older or odd file: the general path
        return [parse_offer(r, origin) for r in _read_rows(text)]
    width = len(header)
    return [parse(row) if len(row) == width else parse_offer(_as_dict(header, row), origin)
            for row in rows]
