"""Issue 15: a damaged price overlay never stops a verb and never puts NaN into a price.
Each bad row is skipped with a warning naming file:line; the bundled row serves instead."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reclaunch.catalog import INSTANCE_COLUMNS, bundled_catalog, load_catalog
from reclaunch.catalog import overlay as ov

ROOT = Path(__file__).resolve().parents[2]
KEY = ("aws", "p4d.24xlarge", "us-east-1")


def bundled_row(key=KEY) -> dict[str, str]:
    o = next(o for o in bundled_catalog().offers if o.key == key)
    return o.to_row()


def write_overlay(d: Path, rows: list[list[str] | dict]) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(INSTANCE_COLUMNS)
    for r in rows:
        w.writerow([r[c] for c in INSTANCE_COLUMNS] if isinstance(r, dict) else r)
    path = d / "instances.csv"
    path.write_text(buf.getvalue())
    return path


BAD = [
    ("short row", lambda r: list(r.values())[:5], "fields, the header has"),
    ("NaN price", lambda r: {**r, "on_demand_usd": "nan"}, "not a number"),
    ("inf price", lambda r: {**r, "spot_usd": "inf"}, "not a number"),
    ("negative price", lambda r: {**r, "on_demand_usd": "-3"}, "is negative"),
    ("zero GPUs", lambda r: {**r, "gpu_count": "0"}, "gpu_count: 0"),
    ("unknown GPU", lambda r: {**r, "gpu": "Z900-1TB"}, "not a GPU the catalog knows"),
    ("text for a number", lambda r: {**r, "vcpus": "ninety-six"}, "invalid literal"),
    ("bad date", lambda r: {**r, "price_as_of": "last week"}, "isoformat"),
]


@pytest.fixture(autouse=True)
def _fresh_warnings():
    ov._warned.clear()


@pytest.mark.parametrize("what, mutate, needle", BAD, ids=[b[0] for b in BAD])
def test_bad_row_is_skipped_with_file_line_and_bundled_row_serves(tmp_path, capsys, what,
                                                                  mutate, needle):
    good = {**bundled_row(("aws", "p5.48xlarge", "us-east-1")), "on_demand_usd": "50"}
    path = write_overlay(tmp_path, [good, mutate(bundled_row())])
    cat = load_catalog(overlay_dir=tmp_path)
    err = capsys.readouterr().err
    assert f"warning: {path}:3: " in err and needle in err, err
    by_key = {o.key: o for o in cat.offers}
    assert by_key[KEY] == next(o for o in bundled_catalog().offers if o.key == KEY)
    assert by_key[("aws", "p5.48xlarge", "us-east-1")].on_demand_usd == 50.0   # good row applied


def test_overlay_header_without_the_columns_is_ignored(tmp_path, capsys):
    (tmp_path / "instances.csv").write_text("a,b\n1,2\n")
    assert load_catalog(overlay_dir=tmp_path).offers == bundled_catalog().offers
    assert "instances.csv:1: header lacks" in capsys.readouterr().err


def test_plan_json_never_carries_nan_from_the_overlay(tmp_path):
    home = tmp_path / "home"
    path = write_overlay(home / "catalog", [{**bundled_row(), "on_demand_usd": "nan",
                                             "spot_usd": "nan"}])
    env = {**os.environ, "RECLAUNCH_HOME": str(home)}
    proc = subprocess.run([sys.executable, "-m", "reclaunch", "plan", "--json",
                           str(ROOT / "examples" / "aws-deepfm-p4d.yaml")], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert f"{path}:2: on_demand_usd: nan is not a number" in proc.stderr

    def no_nan(token):
        raise AssertionError(f"plan --json printed {token}")

    doc = json.loads(proc.stdout, parse_constant=no_nan)
    # The bundled price serves: 4 x p4d.24xlarge at the bundled 21.9576 USD/h.
    assert doc["cost"]["on_demand_usd_per_hour"] == pytest.approx(4 * 21.9576)
