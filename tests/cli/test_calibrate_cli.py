"""`reclaunch calibrate` (host cache, export/import) and measured runs in `plan`.

A synthetic RECLAUNCH_METRICS stream goes through the same recorder a finished run calls
(runtime.measurements.record_run); calibration runs are injected (no dependence on this
machine's speed)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from reclaunch.runtime import calibrate as cal
from reclaunch.runtime import measurements as ms

ROOT = Path(__file__).resolve().parents[2]
LOCAL = str(ROOT / "examples" / "local-deepfm.yaml")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reclaunch", *args], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


def metrics_lines(global_rate: float, intervals: int = 5, world: int = 2) -> list[str]:
    out = []
    for k in range(1, intervals + 1):
        for rank in range(world):
            doc = {"v": 1, "rank": rank, "world_size": world, "step": 50 * k, "time": 1000.0 + k,
                   "interval_steps": 50, "samples_per_s": global_rate / world,
                   "global_samples_per_s": global_rate if rank == 0 else None,
                   "step_s": 0.05, "data_wait_s": 0.001, "fwd_bwd_s": 0.02, "optimizer_s": 0.01,
                   "comm_s": 0.019, "loss": 0.6}
            out.append(f"[rank{rank}]: RECLAUNCH_METRICS " + json.dumps(doc))
    return out


def local_key() -> dict:
    from reclaunch.planner import make_plan
    from reclaunch.planner.measured import key_for, sharding_of
    from reclaunch.spec import load_spec

    plan = make_plan(load_spec(LOCAL))
    return key_for(plan.spec, cloud="local", instance=None, gpus_per_node=plan.gpus_per_node,
                   nodes=plan.nodes, sharding=sharding_of(plan.sharding), host_id=cal.host_id())


def test_a_recorded_run_shows_in_plan_and_prices_it():
    path = ms.record_run(local_key(), metrics_lines(4321.0), "local-deepfm")
    assert path is not None and stat.S_IMODE(path.stat().st_mode) == 0o600
    proc = run("plan", LOCAL, "--json")
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["throughput_basis"]["kind"] == "measured" and d["throughput_basis"]["measured_at"]
    assert d["throughput_samples_per_second"] == pytest.approx(4321.0)
    assert d["throughput_model_samples_per_second"] != pytest.approx(4321.0)
    assert d["duration_hours"] * 3600 == pytest.approx(153600 / 4321.0 + d["startup"]["seconds"], rel=1e-6)
    text = run("plan", LOCAL).stdout
    assert "MEASURED" in text and "priced at the measured rate" in text


def test_too_short_a_run_leaves_no_record():
    assert ms.record_run(local_key(), metrics_lines(1000.0, intervals=1), "x") is None
    assert ms.record_run(None, metrics_lines(1000.0), "x") is None
    assert ms.record_run(local_key(), ["garbage", "RECLAUNCH_METRICS {bad"], "x") is None


def test_export_import_round_trip_and_strict_import(tmp_path, monkeypatch):
    ms.record_run(local_key(), metrics_lines(5000.0), "local-deepfm")
    out = tmp_path / "team.json"
    proc = run("calibrate", "export", str(out))
    assert proc.returncode == 0 and "exported 1" in proc.stdout, proc.stderr
    monkeypatch.setenv("RECLAUNCH_HOME", str(tmp_path / "other-home"))   # a teammate
    assert json.loads(run("plan", LOCAL, "--json").stdout)["throughput_basis"]["kind"] == "model"
    proc = run("calibrate", "import", str(out))
    assert proc.returncode == 0 and "imported 1" in proc.stdout, proc.stderr
    d = json.loads(run("plan", LOCAL, "--json").stdout)
    assert d["throughput_basis"]["kind"] == "measured" and "import team.json" in d["throughput_basis"]["source"]
    again = run("calibrate", "import", str(out))
    assert "imported 0" in again.stdout and "1 already here" in again.stdout

    doc = json.loads(out.read_text())
    doc["records"].append({**doc["records"][0], "samples_per_s": -3})
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    proc = run("calibrate", "import", str(bad))
    assert proc.returncode == 2 and "records[1].samples_per_s" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    for text in ("not json", json.dumps({"kind": "other"}), json.dumps([1, 2])):
        bad.write_text(text)
        proc = run("calibrate", "import", str(bad))
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert run("calibrate", "import", str(tmp_path / "missing.json")).returncode == 2
    # all or nothing: the bad file added nothing
    assert len(ms.load_all()[0]) == 1


def test_records_are_bounded_and_damaged_files_skipped(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    key = local_key()
    from reclaunch.planner.measured import from_dict

    for i in range(5):
        rec = from_dict({**key, "samples_per_s": 1000.0 + i, "measured_at": f"2026-11-0{i + 1}T00:00:00+00:00",
                         "run": f"r{i}"})
        ms.save(rec, d)
        os.utime(next(p for p in d.glob(f"*-r{i}-*.json")), (i, i))
    ms.prune(d, keep=3)
    assert len(list(d.glob("*.json"))) == 3
    (d / "zz-broken.json").write_text("{not json")
    recs, bad = ms.load_all(d)
    assert len(recs) == 3 and len(bad) == 1 and "zz-broken.json" in bad[0]


def fake_runner(doc, trainer):
    b = doc["job"]["batch_size"]
    return {"step_s": 0.04 + b * 2e-5, "samples_per_s": 2 * b / (0.04 + b * 2e-5), "first_step_s": 9.0}


def test_calibration_is_cached_with_the_host_and_used_by_plan(monkeypatch):
    c = cal.calibrate(runner=fake_runner)
    p = cal.cache_path()
    assert p.exists() and stat.S_IMODE(p.stat().st_mode) == 0o600
    from reclaunch import host
    assert c.identity["cores"] == host.cpu_count() and len(c.points) == 2
    got, why = cal.load_for_this_host()
    assert got is not None and why is None and got.points == c.points
    d = json.loads(run("plan", LOCAL, "--json").stdout)
    assert "calibrated on this host" in d["throughput_basis"]["source"]
    assert d["startup"]["seconds"] == 9.0
    # the host changed (another CPU count): the cache is ignored and the plan says so
    monkeypatch.setattr(cal, "identity", lambda: {**c.identity, "cores": c.identity["cores"] + 7})
    got, why = cal.load_for_this_host()
    assert got is None and "host changed" in why and "cores" in why


def test_uncalibrated_local_plan_says_how_and_a_damaged_cache_is_named():
    d = json.loads(run("plan", LOCAL, "--json").stdout)
    assert "uncalibrated" in d["throughput_basis"]["source"]
    assert any("reclaunch calibrate" in w for w in d["warnings"])
    p = cal.cache_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text('{"version": 1, "points": []}')
    got, why = cal.load_for_this_host()
    assert got is None and "points" in why


def test_export_to_an_unwritable_file_names_the_file_not_a_flag(tmp_path):
    # `calibrate export FILE` has no --out: the error must not name one.
    bad = tmp_path / "no-such-dir" / "x.json"
    r = run("calibrate", "export", str(bad))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [f"error: {bad}: cannot write: No such file or directory"]


def test_import_of_broken_json_names_file_and_line(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"kind": "reclaunch-measurements",\n "version": 1\n "records": []}\n')
    with pytest.raises(Exception) as exc:
        ms.read_export(str(bad))
    assert str(exc.value).startswith(f"{bad}:3: not JSON")
    assert getattr(exc.value, "exit_code", None) == 2


def test_calibration_keeps_the_median_of_interleaved_repeats():
    order = []
    slow = {(128, 1): 5.0, (1024, 2): 3.0}   # one run of each batch lands in a busy spell

    def runner(doc, trainer):
        b = doc["job"]["batch_size"]
        k = sum(1 for x in order if x == b)
        order.append(b)
        step = (0.04 + b * 2e-5) * slow.get((b, k), 1.0)
        return {"step_s": step, "samples_per_s": 2 * b / step, "first_step_s": 9.0 + k}

    c = cal.calibrate(runner=runner, repeats=3)
    assert order == [128, 1024] * 3            # interleaved: a slow spell hits both sizes alike
    by_batch = {p.spec_doc["job"]["batch_size"]: p for p in c.points}
    assert by_batch[128].step_s == pytest.approx(0.04 + 128 * 2e-5)     # the outlier is not kept
    assert by_batch[1024].step_s == pytest.approx(0.04 + 1024 * 2e-5)
    assert c.first_step_s == 9.0
    assert len(cal.calibrate(runner=fake_runner, repeats=1).points) == 2
