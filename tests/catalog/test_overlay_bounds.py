"""Issue 26: overlay prices and facts are bounded, a row far from the bundled one is
flagged, and a `source` with markup or escapes is shown as text by `catalog`."""

from __future__ import annotations

import io

import pytest

from reclaunch.catalog import bundled_catalog, load_catalog
from reclaunch.catalog import overlay as ov

from tests.catalog.test_overlay import KEY, bundled_row, write_overlay


@pytest.fixture(autouse=True)
def _fresh_warnings():
    ov._warned.clear()


@pytest.mark.parametrize("col,value,needle", [
    ("on_demand_usd", "1e-300", "outside 0.01..5000"), ("spot_usd", "1e300", "outside 0.01..5000"),
    ("gpu_memory_gib", "0", "gpu_memory_gib: 0 is outside"), ("gpu_count", "100000", "gpu_count"),
    ("source", "x" * 5000, "source: 5000 characters"),
])
def test_absurd_rows_are_skipped(tmp_path, capsys, col, value, needle):
    path = write_overlay(tmp_path, [{**bundled_row(), col: value}])
    cat = load_catalog(overlay_dir=tmp_path)
    err = capsys.readouterr().err
    assert f"{path}:2: " in err and needle in err, err
    assert {o.key: o for o in cat.offers}[KEY] == next(o for o in bundled_catalog().offers if o.key == KEY)


def test_a_price_far_from_the_bundled_one_is_flagged_but_used(tmp_path, capsys):
    row = bundled_row()
    write_overlay(tmp_path, [{**row, "on_demand_usd": str(float(row["on_demand_usd"]) * 20)}])
    cat = load_catalog(overlay_dir=tmp_path)
    assert "more than 10x off the bundled" in capsys.readouterr().err
    assert {o.key: o for o in cat.offers}[KEY].on_demand_usd == float(row["on_demand_usd"]) * 20


def test_a_source_with_markup_is_shown_as_text(tmp_path):
    from rich.console import Console

    from reclaunch.ui.catalog import offers_table

    evil = "[/bogus] [link=http://evil]x[/link] \x1b]0;t\x07"
    write_overlay(tmp_path, [{**bundled_row(), "source": evil}])
    cat = load_catalog(overlay_dir=tmp_path)
    rows = [o for o in cat.offers if o.key == KEY]
    buf = io.StringIO()
    Console(file=buf, force_terminal=True, width=200).print(offers_table(rows, cat, width=200))
    out = buf.getvalue()
    assert "[/bogus]" in out and "\x1b]8;" not in out and "\x1b]0;" not in out
