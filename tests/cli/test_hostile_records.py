"""Issue 41 items 3, 4, 7, 9: measured-run records and the host calibration as a hostile user
would leave them. Forged figures and dates are refused, a FIFO or a link to /dev/zero is named
and skipped (never waited on), a damaged host.json means "uncalibrated", pruning never evicts
this machine's runs for imported ones, and an import is all or nothing."""

from __future__ import annotations

import json
import math
import os

import pytest

from reclaunch.errors import UsageError
from reclaunch.planner.measured import from_dict
from reclaunch.runtime import calibrate as cal
from reclaunch.runtime import measurements as ms
from tests.cli.test_calibrate_cli import LOCAL, fake_runner, local_key


def _export(tmp_path, *records) -> str:
    path = tmp_path / "team.json"
    path.write_text(json.dumps({"kind": "reclaunch-measurements", "version": 1, "records": list(records)}))
    return str(path)


def _rec(**kw) -> dict:
    return {**local_key(), "samples_per_s": 5000.0, "measured_at": "2026-11-20T00:00:00+00:00",
            "run": "teammate", **kw}


def _plan():
    from reclaunch.planner import make_plan
    from reclaunch.spec import load_spec

    spec = load_spec(LOCAL)
    return make_plan(spec, context=ms.plan_context(spec))


@pytest.mark.parametrize("field, value", [
    ("samples_per_s", 1e308), ("samples_per_s", float("inf")), ("measured_at", "2099-01-01T00:00:00+00:00"),
    ("measured_at", "0001-01-01T00:00:00"), ("steps", 10**30), ("step", {"step_s": 1e300}),
])
def test_an_implausible_record_is_refused_and_imports_nothing(tmp_path, field, value):
    path = _export(tmp_path, _rec(run="fine"), _rec(**{field: value}))
    with pytest.raises(UsageError, match=rf"records\[1\]\.{field}"):
        ms.import_file(path)
    assert ms.load_all()[0] == []


def test_an_imported_record_far_from_the_model_is_not_priced_and_the_plan_says_so(tmp_path):
    cal.calibrate(runner=fake_runner)   # a model with a basis (this host's calibration)
    model = _plan().throughput_model_samples_per_second
    ms.import_file(_export(tmp_path, _rec(samples_per_s=model * 50)))
    p = _plan()
    assert p.throughput_basis["kind"] == "model"
    assert p.throughput_samples_per_second == pytest.approx(model)
    assert any("more than the 4x an imported record may move a plan" in w for w in p.warnings)
    # Within the stated factor it prices the plan, and a run of this machine's own always counts:
    # the clean runs of the shape are weighed together (their median), the far import left out.
    ms.import_file(_export(tmp_path, _rec(samples_per_s=model * 2, measured_at="2026-11-21T00:00:00+00:00")))
    assert _plan().throughput_samples_per_second == pytest.approx(model * 2)
    ms.save(from_dict(_rec(samples_per_s=model * 50, measured_at="2026-11-22T00:00:00+00:00", run="mine")))
    p = _plan()
    assert p.throughput_samples_per_second == pytest.approx(model * (2 + 50) / 2)
    assert p.throughput_basis["clean_runs"] == 2


@pytest.mark.timeout(60)
def test_a_fifo_or_dev_zero_in_measurements_is_named_not_waited_on(tmp_path):
    good = ms.save(from_dict(_rec(run="mine")))
    d = good.parent
    os.mkfifo(d / "20260101T000000-fifo-aaaaaaaaaaaa.json")
    os.symlink("/dev/zero", d / "20260101T000000-zero-bbbbbbbbbbbb.json")
    (d / "20260101T000000-big-cccccccccccc.json").write_bytes(b" " * (ms.MAX_FILE_BYTES + 1))
    recs, bad = ms.load_all()
    assert [r.run for r in recs] == ["mine"] and len(bad) == 3
    assert all("regular file" in b or "over" in b or "larger" in b for b in bad), bad
    assert _plan().throughput_basis["kind"] == "measured"
    fifo = tmp_path / "team.fifo"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="not a regular file"):
        ms.import_file(str(fifo))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("damage", ["fifo", "dev-zero", "nan", "inf", "tiny", "spec", "future"])
def test_a_damaged_host_calibration_means_uncalibrated(damage):
    cal.calibrate(runner=fake_runner)
    p = cal.cache_path()
    doc = json.loads(p.read_text())
    p.unlink()
    if damage == "fifo":
        os.mkfifo(p)
    elif damage == "dev-zero":
        os.symlink("/dev/zero", p)
    else:
        if damage in ("nan", "inf"):
            doc["first_step_s"] = float(damage)
        elif damage == "tiny":
            doc["points"][0]["step_s"] = 1e-300
        elif damage == "spec":
            doc["points"][0]["spec_doc"]["nodes"] = "many"
        else:
            doc["measured_at"] = "2099-01-01T00:00:00+00:00"
        p.write_text(json.dumps(doc))
    got, why = cal.load_for_this_host()
    assert got is None and why.startswith("uncalibrated"), why
    plan = _plan()
    assert "uncalibrated" in plan.throughput_basis["source"]
    assert math.isfinite(plan.duration_hours) and plan.throughput_samples_per_second < 1e7


def test_pruning_keeps_local_runs_over_an_import_of_old_records(tmp_path, monkeypatch):
    monkeypatch.setattr(ms, "MAX_RECORDS", 5)
    for i in range(3):
        ms.save(from_dict(_rec(run=f"mine-{i}", measured_at=f"2026-11-1{i}T00:00:00+00:00")))
    old = [_rec(run=f"old-{i}", samples_per_s=4000.0 + i, measured_at=f"2025-01-{i + 1:02d}T00:00:00+00:00")
           for i in range(8)]
    ms.prune(ms.store(), keep=5)
    new, _ = ms.import_file(_export(tmp_path, *old))
    assert new == 8
    ms.prune(ms.store(), keep=5)
    runs = sorted(r.run for r in ms.load_all()[0])
    assert runs == ["mine-0", "mine-1", "mine-2", "old-6", "old-7"], runs


def test_import_is_all_or_nothing(tmp_path, monkeypatch):
    # A run named like a path: saved under a name of its own, never a subdirectory.
    n, _ = ms.import_file(_export(tmp_path, _rec(run="fine"), _rec(run="a/b", samples_per_s=5001.0),
                                  _rec(run="..", samples_per_s=5002.0)))
    assert n == 3 and sorted(r.run for r in ms.load_all()[0]) == ["..", "a/b", "fine"]
    assert all(p.parent == ms.store() for p in ms.store().iterdir())
    # A write that fails half way (a full disk) leaves none of this import behind.
    real, calls = ms._atomic_write, []

    def full_disk(path, text):
        calls.append(path)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real(path, text)
    monkeypatch.setattr(ms, "_atomic_write", full_disk)
    with pytest.raises(UsageError, match="nothing imported"):
        ms.import_file(_export(tmp_path, _rec(run="x1", samples_per_s=6001.0), _rec(run="x2", samples_per_s=6002.0)))
    assert sorted(r.run for r in ms.load_all()[0]) == ["..", "a/b", "fine"]
