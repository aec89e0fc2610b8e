"""bench/gpu_check.sh, tested before any GPU sees it (issue 39): the same script end to end on
CPU with a planted failure of every check, the deadline, the rows written as they come, the
runs that cannot block or outlive their timeout, and the plans made here and carried."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import gpu_check_proc  # noqa: E402


@pytest.fixture
def short_tmp():
    """A TMPDIR of our own with a short path (DataLoader workers make Unix sockets in it)."""
    path = Path(tempfile.mkdtemp(prefix="gct", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _env(tmp_path, tmpdir: Path, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECLAUNCH_")}
    env.update(PYTHON=sys.executable, PYTHONPATH=str(ROOT), OUT=str(tmp_path / "out"), TMPDIR=str(tmpdir),
               OMP_NUM_THREADS="1", **extra)
    return env


def _rows(tmp_path):
    return [json.loads(line) for line in (tmp_path / "out" / "gpu_check.jsonl").read_text().splitlines()]


@pytest.mark.timeout(900)
def test_cpu_smoke_runs_every_check_and_catches_every_planted_failure(tmp_path, short_tmp):
    """Each trainer start costs seconds of torch import; the smoke keeps to ~14 runs."""
    t0 = time.monotonic()
    proc = subprocess.run([str(ROOT / "bench" / "gpu_check.sh"), "--cpu-smoke"], env=_env(tmp_path, short_tmp),
                          cwd=ROOT, capture_output=True, text=True, timeout=880)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    rows = _rows(tmp_path)
    kinds = [r["kind"] for r in rows]
    assert kinds[0] == "start" and kinds[-1] == "summary" and "skipped" not in kinds
    assert rows[0]["smoke"] and rows[0]["plant"] and rows[0]["plans_commit"]
    checks = [r for r in rows if r["kind"] == "check"]
    assert all(r["as_expected"] for r in checks), [r for r in checks if not r["as_expected"]]
    for stage in ("build", "checkpoint", "precision", "throughput"):
        mine = [r for r in checks if r["stage"] == stage]
        assert any(r["ok"] and not r["planted"] for r in mine), stage
        assert any(r["planted"] and not r["ok"] for r in mine), f"{stage}: no planted failure caught"
    assert {r["check"] for r in checks if r["stage"] == "build" and not r["planted"]} == \
        {"deepfm", "dcnv2", "dlrm", "din"}
    sig = next(r for r in checks if r["check"].startswith("SIGTERM") and not r["planted"])
    assert sig["ok"] and sig["save_seconds"] >= 0 and sig["save_bytes"] > 0
    planted_precision = {r["check"].split(": ")[-1] for r in checks if r["stage"] == "precision" and r["planted"]}
    assert planted_precision == {"the forward's state", "finite loss", "bf16 not slower than fp32"}
    (thr,) = [r for r in rows if r["kind"] == "throughput"]
    assert thr["measured_samples_per_s"] > 0 and thr["planned_samples_per_s"] > 0
    assert thr["engine"] == "ddp" and thr["planned_stack"] == "torchrec"     # unlike: never calibration
    assert thr["loader_only_samples_per_s"] > 0
    assert set(thr["measured_ms"]) == set(thr["planned_ms"]) == {"step_s", "data_wait_s", "compute_s", "comm_s"}
    assert set(thr["measured_parts_ms"]) == {"step_s", "data_wait_s", "fwd_bwd_s", "optimizer_s", "comm_s"}
    assert thr["windows"] >= 2 and thr["peak_mem_gib"] > 0 and thr["planned_mem_gib"]["total"] > 0
    assert "measured" in proc.stdout and "planned" in proc.stdout
    assert not list(short_tmp.iterdir()), "temporary files left behind"
    print(f"smoke {time.monotonic() - t0:.0f}s")


@pytest.fixture
def smoke_plans(tmp_path, short_tmp):
    path = tmp_path / "plans.json"
    subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_check_plans.py"), "--smoke", str(path)],
                   env=_env(tmp_path, short_tmp), cwd=ROOT, check=True, capture_output=True, timeout=120)
    return path


@pytest.mark.timeout(120)
def test_the_deadline_skips_what_would_not_fit_and_says_so(tmp_path, smoke_plans, short_tmp):
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_check.py"), "--cpu-smoke", "--plans",
                           str(smoke_plans), "--deadline-seconds", "12"], env=_env(tmp_path, short_tmp), cwd=ROOT,
                          capture_output=True, text=True, timeout=100)
    assert proc.returncode == 1 and time.monotonic() - t0 < 60, proc.stdout + proc.stderr
    rows = _rows(tmp_path)
    skipped = [r for r in rows if r["kind"] == "skipped"]
    assert skipped and all(r["reason"] == "deadline" for r in skipped)
    assert rows[-1]["kind"] == "summary" and rows[-1]["skipped"] == len(skipped)
    assert not list(short_tmp.iterdir())


@pytest.mark.timeout(60)
def test_plans_are_needed_and_must_match_the_mode(tmp_path, smoke_plans, short_tmp):
    gpu = [sys.executable, str(ROOT / "bench" / "gpu_check.py")]
    none = subprocess.run([*gpu, "--plans", str(tmp_path / "nope.json")], env=_env(tmp_path, short_tmp), cwd=ROOT,
                          capture_output=True, text=True, timeout=50)
    assert none.returncode == 2 and "gpu_check.sh --prepare" in none.stderr and "Traceback" not in none.stderr
    wrong = subprocess.run([*gpu, "--plans", str(smoke_plans)], env=_env(tmp_path, short_tmp), cwd=ROOT,
                           capture_output=True, text=True, timeout=50)
    assert wrong.returncode == 2 and "smoke plans" in wrong.stderr


@pytest.mark.timeout(60)
def test_a_run_past_its_timeout_is_killed_with_all_it_started(tmp_path):
    """No read can block (output goes to a file) and a run past its time takes its whole tree
    with it: here a child in a session of its own, as torchrun starts its workers."""
    script = ("import subprocess, sys, time\n"
              "kid = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True)\n"
              "print(kid.pid, flush=True)\n"
              "time.sleep(60)\n")
    run = gpu_check_proc.Run([sys.executable, "-c", script], dict(os.environ), tmp_path / "run.log", tmp_path)
    seen = []
    got = run.watch(3.0, lambda line, _run: seen.append(line))
    assert got["timed_out"] and got["seconds"] < 10 and seen
    kid = int(seen[0])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not _gone(kid):
        time.sleep(0.1)
    assert _gone(kid), "the run's child outlived its timeout"


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"     # killed, not yet reaped
    except FileNotFoundError:
        return True


@pytest.mark.timeout(60)
def test_rows_are_on_disk_as_soon_as_they_are_made(tmp_path):
    rows = gpu_check_proc.Rows(tmp_path / "out" / "x.jsonl")
    rows.add({"kind": "a"})
    assert json.loads((tmp_path / "out" / "x.jsonl").read_text())["kind"] == "a"
    d = gpu_check_proc.Deadline(30, reserve=10)
    assert 19 < d.budget(100, 5) <= 20 and d.budget(100, 25) is None


@pytest.mark.timeout(120)
def test_a_gpu_runs_rows_become_calibration_rows_the_planner_reads(tmp_path, smoke_plans):
    """What a GPU run would add to planner/data/calibration.yaml, and that the calibration
    harness (planner/published.py) builds a plan from it: the model as it ran, its own source."""
    import yaml

    import gpu_check_plans
    from reclaunch.catalog import load_catalog
    from reclaunch.planner import published

    plans = json.loads(smoke_plans.read_text())
    entry = next(e for e in plans["runs"] if e["stage"] == "throughput")
    jsonl = tmp_path / "gpu_check.jsonl"
    start = {"kind": "start", "t": "2026-12-03T10:00:00Z", "device": "NVIDIA H200", "torch": "2.11.0+cu128"}
    measured = {"kind": "throughput", "id": entry["id"], "device": "cuda", "measured_samples_per_s": 123456.7,
                "windows": 5, "spread": 0.02, "loader_only_samples_per_s": 5e5}

    def rows_for(engine):
        jsonl.write_text("\n".join(json.dumps(r) for r in [
            start, {"kind": "check", "id": entry["id"], "ok": True, "planted": False},
            {**measured, **({"engine": engine} if engine else {})}]) + "\n")
        return gpu_check_plans.calibration_rows(jsonl, plans)

    # The check's runs use the ddp engine, whose plan is the torchrec stack's: kept out (an
    # untagged row is one of those too), said so in a comment.
    for engine in ("ddp", None):
        (kept,) = rows_for(engine)
        assert yaml.safe_load(kept) is None and entry["id"] in kept and "engine=ddp" in kept
    (text,) = rows_for("torchrec")
    (row,) = yaml.safe_load(text)
    assert row["job_stack"] == "torchrec" and row["stack"] == "reclaunch torchrec engine"
    assert row["published"] == 123456.7 and row["gpus_per_node"] == 1 and row["gpu"] == "H200-141GB"
    assert row["source"].startswith("reclaunch bench/gpu_check.py 2026-12-03 on NVIDIA H200")
    r = published.Row(row["id"], row["source"], row["stack"], row["family"], row["gpu"], row["published"], row)
    plan, ratio = published.predict(r, load_catalog())
    assert plan.world_size == 1 and ratio > 0 and plan.memory.parallelism == "data"
