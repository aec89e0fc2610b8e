"""The bundled data files' parsed twins (catalog/prebuilt.py): current, used, equal to the
parse in values, types and order, fresh per call, and never used for another text."""

from __future__ import annotations

import dataclasses

import pytest

from reclaunch import catalog
from reclaunch.catalog import prebuilt, prebuilt_data
from reclaunch.planner import constants
from tests.catalog.test_reader import _same


def test_the_committed_twins_are_current() -> None:
    # Fails after a data file changed without its twin: run `python -m reclaunch.catalog.prebuilt`
    # (the catalog generators and bench_calibration.py --write do it themselves).
    assert prebuilt.OUT.read_text() == prebuilt.render(), \
        "stale: run python -m reclaunch.catalog.prebuilt"
    assert prebuilt.main(["--check"]) == 0


@pytest.mark.parametrize("key", list(prebuilt.SOURCES))
def test_each_twin_serves_its_file_as_the_parser_reads_it(key: str) -> None:
    text = prebuilt.source_text(key)
    value = prebuilt.prebuilt(key, text)
    assert value is not None                     # the runtime text is the one it was made from
    assert repr(value) == repr(prebuilt.parse(key, text))   # types and order, not only ==


@pytest.mark.parametrize("key", list(prebuilt.SOURCES))
def test_another_text_is_parsed_not_served(key: str) -> None:
    text = prebuilt.source_text(key)
    assert prebuilt.prebuilt(key, text + "\n") is None
    assert prebuilt.prebuilt(key, text.replace("0", "1", 1)) is None
    assert prebuilt.prebuilt("catalog/data/nothing.yaml", text) is None


def test_each_call_is_a_fresh_copy() -> None:
    key = "planner/data/planner.yaml"
    text = prebuilt.source_text(key)
    a, b = prebuilt.prebuilt(key, text), prebuilt.prebuilt(key, text)
    a["perf"]["hbm_efficiency"] = -1.0
    assert a is not b and b["perf"]["hbm_efficiency"] != -1.0


def _without_twins(monkeypatch) -> None:
    monkeypatch.setattr(prebuilt_data, "PREBUILT", {})


def test_the_bundled_catalog_is_the_same_with_and_without_twins(monkeypatch) -> None:
    served = catalog._bundled.__wrapped__(0)
    _without_twins(monkeypatch)
    parsed = catalog._bundled.__wrapped__(0)
    assert served[0] == parsed[0] and served[2] == parsed[2]
    _same(list(served[1]), list(parsed[1]))
    assert [dataclasses.replace(o) for o in served[1][:3]] == list(served[1][:3])


def test_the_planner_data_is_the_same_with_and_without_twins(monkeypatch) -> None:
    served = [constants.data_yaml(n) for n in ("planner.yaml", "startup.yaml")]
    _without_twins(monkeypatch)
    assert repr([constants.data_yaml(n) for n in ("planner.yaml", "startup.yaml")]) == repr(served)


def test_the_parsers_are_not_run_when_twins_serve(monkeypatch) -> None:
    from reclaunch.catalog import reader

    def refuse(*a, **k):
        raise AssertionError("parsed although a current twin exists")

    monkeypatch.setattr(reader, "read_offers", refuse)
    monkeypatch.setattr(catalog, "parse_yaml", refuse)
    monkeypatch.setattr(prebuilt, "parse", refuse)   # the fallback of both loaders
    assert len(catalog._bundled.__wrapped__(0)[1]) > 600
    assert constants.data_yaml("startup.yaml")["targets"]


def test_write_rewrites_only_a_stale_file(tmp_path, monkeypatch) -> None:
    out = tmp_path / "prebuilt_data.py"
    monkeypatch.setattr(prebuilt, "OUT", out)
    assert prebuilt.main(["--check"]) == 1
    assert prebuilt.write() is True and prebuilt.write() is False
    assert out.read_text() == prebuilt.render()
    assert prebuilt.main(["--check"]) == 0


def test_a_value_repr_cannot_write_is_refused(monkeypatch) -> None:
    real = prebuilt.parse
    monkeypatch.setattr(prebuilt, "parse", lambda key, text: (
        {"x": float("inf")} if key.endswith("meta.yaml") else real(key, text)))
    with pytest.raises(ValueError, match="meta.yaml cannot be written"):
        prebuilt.render()


def test_a_data_file_without_a_twin_is_parsed() -> None:
    # object_storage.yaml and calibration.yaml are off the path of every plan: no twin, parsed.
    from reclaunch.catalog import package_data, parse_yaml

    for name in ("object_storage.yaml", "calibration.yaml"):
        assert f"planner/data/{name}" not in prebuilt.SOURCES
        text = package_data(constants.__file__, "reclaunch.planner", name)
        assert repr(constants.data_yaml(name)) == repr(parse_yaml(text))
