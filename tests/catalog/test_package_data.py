"""catalog.package_data reads data files without read_text()'s newline decoder where that
cannot change the text; whatever the bytes, the text is read_text()'s (or, with
any_newline, the same lines by str.splitlines)."""

from __future__ import annotations

from pathlib import Path

import pytest

import reclaunch.catalog as catalog
import reclaunch.planner.constants as constants
from reclaunch.catalog import package_data


@pytest.mark.parametrize("module", [catalog, constants])
def test_every_shipped_data_file_reads_as_read_text(module) -> None:
    files = sorted((Path(module.__file__).with_name("data")).iterdir())
    assert files
    for f in files:
        assert package_data(module.__file__, module.__package__, f.name) == f.read_text()
        same = package_data(module.__file__, module.__package__, f.name, any_newline=True)
        assert same.splitlines() == f.read_text().splitlines()


@pytest.mark.parametrize("raw", [
    b"a,b\nc,d\n", b"a,b\r\nc,d\r\n", b"a\rb\r\n\nc\x0bd\n", "caf\u00e9,\u2028x\r\ny\n".encode(),
    b"", b"\r", b"no newline at the end",
])
def test_any_bytes_read_as_read_text(tmp_path, raw) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "f.csv").write_bytes(raw)
    anchor = str(tmp_path / "mod.py")
    want = (tmp_path / "data" / "f.csv").read_text()
    assert package_data(anchor, "nopkg", "f.csv") == want
    assert package_data(anchor, "nopkg", "f.csv", any_newline=True).splitlines() == \
        want.splitlines()
