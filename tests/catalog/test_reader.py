"""catalog/reader.read_offers (the start-up path of validate and plan) makes exactly the Offers
parse_offer makes: every bundled row, a plugin's rows, and the odd files that take the general
path. Equal is checked field by field, in field order, with types, not only with ==."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from reclaunch.catalog import INSTANCE_COLUMNS, Offer, _bundled_text, _read_rows, parse_offer
from reclaunch.catalog.reader import read_offers
from tests.extend.test_toy_cloud import TOY


def _slow(text: str, origin: str = "bundled") -> list[Offer]:
    return [parse_offer(r, origin) for r in _read_rows(text)]


def _same(fast: list[Offer], slow: list[Offer]) -> None:
    assert len(fast) == len(slow) > 0
    for a, b in zip(fast, slow):
        assert type(a) is Offer
        assert list(vars(a).items()) == list(vars(b).items())   # same fields, same order
        assert [type(v) for v in vars(a).values()] == [type(v) for v in vars(b).values()]
        assert a == b and hash(a) == hash(b) and repr(a) == repr(b)
        assert dataclasses.asdict(a) == dataclasses.asdict(b)


def test_every_bundled_row_is_what_parse_offer_makes() -> None:
    text = _bundled_text("instances.csv")
    _same(read_offers(text), _slow(text))


def test_a_plugin_clouds_rows_and_the_overlay_origin() -> None:
    text = (TOY / "offers.csv").read_text()
    _same(read_offers(text, origin="overlay"), _slow(text, origin="overlay"))


def test_an_offer_read_is_frozen_and_replaceable() -> None:
    o = read_offers(_bundled_text("instances.csv"))[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.region = "elsewhere"   # type: ignore[misc]
    moved = dataclasses.replace(o, region="elsewhere")
    assert moved.region == "elsewhere" and moved.gpu == o.gpu and isinstance(moved.price_as_of, dt.date)


def _csv(header: list[str], *rows: list[str]) -> str:
    return "\n".join(",".join(r) for r in (header, *rows)) + "\n"


ROW = dict(zip(INSTANCE_COLUMNS, [
    "aws", "p4d.24xlarge", "us-east-1", "A100-40GB", "8", "40", "nvlink", "NVLink3", "600", "efa",
    "4", "400", "true", "96", "1152", "8000", "32.77", "12.5", "11", "14", "2026-11-09", "src",
    " use1-az1 ", "", "",
]))


def test_values_that_need_a_default_or_a_strip() -> None:
    row = {**ROW, "nvlink_gbs_per_gpu": "", "nics": "", "local_nvme_gb": "", "spot_usd": " ",
           "gpudirect": " TRUE ", "purchase": " capacity-block ", "purchase_usd": " 31.5 "}
    text = _csv(list(row), list(row.values()))
    _same(read_offers(text), _slow(text))
    o = read_offers(text)[0]
    assert (o.nics, o.spot_usd, o.gpudirect, o.zones, o.purchase, o.purchase_usd) == \
        (0, None, True, "use1-az1", "capacity-block", 31.5)


def test_an_older_header_or_a_reordered_one_reads_the_same() -> None:
    old = [c for c in INSTANCE_COLUMNS if c not in ("zones", "purchase", "purchase_usd")]
    text = _csv(old, [ROW[c] for c in old])
    _same(read_offers(text), _slow(text))
    shuffled = list(reversed(INSTANCE_COLUMNS))
    text = _csv(shuffled, [ROW[c] for c in shuffled])
    _same(read_offers(text), _slow(text))


def test_a_row_of_another_length_reads_or_fails_as_it_did() -> None:
    header = list(INSTANCE_COLUMNS)
    short = _csv(header, list(ROW.values())[:-4])     # source..purchase_usd missing: None
    _same(read_offers(short), _slow(short))
    shorter = _csv(header, list(ROW.values())[:-6])   # no spot_high_usd: None.strip()
    with pytest.raises(AttributeError) as fast:
        read_offers(shorter)
    with pytest.raises(AttributeError) as slow:
        _slow(shorter)
    assert str(fast.value) == str(slow.value)
    long_row = _csv(header, [*ROW.values(), "extra"])
    _same(read_offers(long_row), _slow(long_row))


@pytest.mark.parametrize("bad", [
    {"vcpus": "many"},
    {"spot_usd": "cheap", "price_as_of": "yesterday"},     # the first in field order is named
    {"price_as_of": "yesterday", "purchase_usd": "x"},
    {"gpu_count": "eight", "on_demand_usd": "lots"},
])
def test_a_bad_value_fails_with_the_same_error(bad) -> None:
    text = _csv(list(ROW), list({**ROW, **bad}.values()))
    with pytest.raises(ValueError) as fast:
        read_offers(text)
    with pytest.raises(ValueError) as slow:
        _slow(text)
    assert str(fast.value) == str(slow.value)


def test_an_empty_file_has_no_rows() -> None:
    assert read_offers("") == [] == _slow("")


def test_the_overlay_reads_the_same_rows_and_warnings_either_way(tmp_path, monkeypatch) -> None:
    """catalog.read_overlay hands overlay.read_overlay the row parser; without it every row
    is a dict through parse_offer. Same offers, same `file:line` warnings, good or bad."""
    import reclaunch.catalog.overlay as ov
    from reclaunch.catalog import bundled_catalog, read_overlay

    bad = [{"on_demand_usd": "nan"}, {"spot_usd": "-1"}, {"gpu": "Z100"}, {"vcpus": "x"},
           {"spot_usd": "cheap", "price_as_of": "2026-13-01"}, {"on_demand_usd": "", "spot_usd": ""},
           {"fabric": "pigeon"}, {"cloud": "local"}, {"gpu_count": "0"}, {"gpudirect": " True "}]
    rows = [ROW, *({**ROW, "region": f"r{i}", **b} for i, b in enumerate(bad))]
    header = [f" {c} " for c in reversed(INSTANCE_COLUMNS)]        # stripped, any order
    body = [",".join(r[c.strip()] for c in header) for r in rows]
    text = "\n".join([",".join(header), *body[:3], "", "only,three,fields", *body[3:]]) + "\n"
    path = tmp_path / "instances.csv"
    path.write_text(text)
    gpus = bundled_catalog().gpus

    slow_warned: list[str] = []
    slow = ov.read_overlay(path, parse_offer, gpus, warn=slow_warned.append)
    fast_warned: list[str] = []
    real = ov.read_overlay
    used = []

    def spy(*a, **k):
        used.append(k["row_parser"](header=[c.strip() for c in header]))
        return real(*a, **{**k, "warn": fast_warned.append})

    monkeypatch.setattr(ov, "read_overlay", spy)
    fast = read_overlay(path)
    assert callable(used[0])    # the rows did go through the row parser
    _same(fast, slow)
    assert [o.region for o in fast] == ["us-east-1", "r9"]
    assert fast_warned == slow_warned and len(slow_warned) == 10
    assert any(":9: could not convert string to float: 'cheap'" in w for w in slow_warned), slow_warned


def test_quoted_fields_read_as_csv_reads_them() -> None:
    """Lines without a quote are split at their commas; a line with one goes to csv.reader,
    which reads on over the next lines when a quoted field spans them, as over the whole file."""
    header = list(INSTANCE_COLUMNS)
    plain = list(ROW.values())
    quoted = {**ROW, "source": '"a, quoted ""source"", with commas"', "zones": '"z1 z2"'}
    odd = {**ROW, "region": 'r"1', "source": 'a "b" c'}   # a quote inside a field: literal
    cut = header.index("source")
    spanning = [*{**ROW, "region": "r2"}.values()][:cut] + ['"starts here,']
    ends = ['and ends here"', *plain[cut + 1:]]
    text = _csv(header, plain, list(quoted.values()), plain, list(odd.values()), spanning, ends,
                plain)
    fast, slow = read_offers(text), _slow(text)
    _same(fast, slow)
    assert fast[1].source == 'a, quoted "source", with commas' and fast[1].zones == "z1 z2"
    assert fast[3].region == 'r"1' and len(fast) == 6   # the spanning row is one Offer
    assert fast[4].region == "r2" and fast[4].source.startswith("starts here,")


def test_a_row_that_fails_leaves_nothing_behind_for_the_next() -> None:
    """A bad instance fact fails every row that has it, not only the first (the overlay reads
    on after a bad row, so the row parser must not keep a half-made entry)."""
    from reclaunch.catalog.reader import row_parser

    header = list(INSTANCE_COLUMNS)
    parse = row_parser(header)
    bad = [{**ROW, "vcpus": "many"}[c] for c in header]
    for _ in range(2):
        with pytest.raises(ValueError, match="many"):
            parse(list(bad))
    assert parse([ROW[c] for c in header]).vcpus == 96
