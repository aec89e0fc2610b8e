"""Issue 26 through the real CLI: `status` of many clusters keeps working when one has
damaged or hostile state and says which; names are never paths; a truncated journal gives
one story across status, logs, diagnose and preempt."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.cli.test_cli_robustness import env, run  # noqa: F401  (fixture)


def _local(home: Path, name: str, state, **files) -> Path:
    root = home / "local" / name
    root.mkdir(parents=True, exist_ok=True)
    if state is not None:
        (root / "state.json").write_text(json.dumps(state) if not isinstance(state, str) else state)
    for fname, text in files.items():
        (root / fname.replace("_", ".")).write_text(text)
    return root


def _good(name: str, **over):
    return {"name": name, "run_id": "r", "state": "Succeeded", "nodes": [], "torn_down": True,
            "started_at": 100.0, "finished_at": 160.0, **over}


EVIL = "[/bogus] [link=http://evil.example]x[/link] \x1b]0;owned\x07 \x1b[31m"


@pytest.mark.timeout(120)
def test_status_of_many_clusters_survives_each_kind_of_damage_and_names_it(env):
    home = Path(env["RECLAUNCH_HOME"])
    _local(home, "good", _good("good"))
    _local(home, "huge", _good("huge", started_at=1e308))
    _local(home, "markup", _good("markup", state="Failed", message=EVIL,
                                 failure={"last_lines": [EVIL]}))
    fifo_root = _local(home, "fifo", None)
    os.mkfifo(fifo_root / "state.json")
    zero_root = _local(home, "zero", None)
    (zero_root / "state.json").symlink_to("/dev/zero")
    jdir = home / "journal"
    jdir.mkdir(parents=True, exist_ok=True)
    os.mkfifo(jdir / "jfifo.jsonl")
    (jdir / "jzero.jsonl").symlink_to("/dev/zero")
    _local(home, "metrics", _good("metrics"))
    (home / "local" / "metrics" / "nodes").mkdir()
    (home / "local" / "metrics" / "nodes" / "node-0.log").write_text(
        "[rank0]: RECLAUNCH_METRICS " + "[" * 100_000 + "\n"
        + "[rank0]: RECLAUNCH_METRICS {\"v\":1,\"rank\":0,\"step\":" + "9" * 400 + "}\n"
        + "[rank0]: step=1 loss=0.1 samples_per_s=1.2.3\n")
    for args in (("status", "--json"), ("status",)):
        proc = run(env, *args, timeout=60)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        assert "\x1b]0;" not in proc.stdout and "\x1b]8;" not in proc.stdout
    rows = {r["name"]: r for r in json.loads(run(env, "status", "--json").stdout)}
    assert rows["good"]["state"] == "Succeeded"
    assert rows["huge"]["state"] == "Unknown" and "started_at" in rows["huge"]["message"]
    for bad in ("fifo", "zero"):
        assert rows[bad]["state"] == "Unknown" and "not a regular file" in rows[bad]["message"]
    for bad in ("jfifo", "jzero"):
        assert rows[bad]["state"] == "Unknown" and f"{bad}.jsonl" in rows[bad]["message"]
    assert "[/bogus]" in run(env, "status").stdout


def test_status_of_a_path_is_refused_before_reading_anything(env, tmp_path):
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "state.json").write_text(json.dumps(_good("evil")))
    for name in ("../../../evil", str(evil), "a/b"):
        proc = run(env, "status", name)
        assert proc.returncode == 2 and "is not a cluster name" in proc.stderr, proc.stderr


def test_a_truncated_journal_tells_one_story(env):
    home = Path(env["RECLAUNCH_HOME"])
    _local(home, "trunc", _good("trunc", state="Running", torn_down=False, supervisor_pid=None),
           launch_json=json.dumps({"name": "trunc", "run_id": "r", "nodes": 1, "max_nodes": 1,
                                   "nproc": 1}))
    (home / "journal").mkdir(parents=True, exist_ok=True)
    (home / "journal" / "trunc.jsonl").write_text('{"t": 1, "step": "up", "outc')   # torn
    st = json.loads(run(env, "status", "trunc", "--json").stdout)
    assert st["cloud"] == "local"
    logs = run(env, "logs", "trunc")
    assert logs.returncode == 0, logs.stderr
    diag = run(env, "diagnose", "trunc")
    assert "no cluster named" not in diag.stderr and diag.returncode == 1   # exists; no metrics
    pre = run(env, "preempt", "trunc", "--node", "0")
    assert "no cluster named" not in pre.stderr and "not running" in pre.stderr


def test_logs_and_error_lines_show_escapes_as_text(env):
    home = Path(env["RECLAUNCH_HOME"])
    root = _local(home, "noisy", _good("noisy"),
                  launch_json=json.dumps({"name": "noisy", "run_id": "r", "nodes": 1,
                                          "max_nodes": 1, "nproc": 1}))
    (root / "nodes").mkdir()
    (root / "nodes" / "node-0.log").write_text("[rank0]: hi \x1b]0;owned\x07 \x1b[31mred\n")
    proc = run(env, "logs", "noisy")
    assert proc.returncode == 0 and "\x1b" not in proc.stdout and "\\x1b]0;owned" in proc.stdout
    (root / "launch.json").write_text(json.dumps({"name": "noisy", "max_nodes": "\x1b[31mabc"}))
    proc = run(env, "logs", "noisy", "--rank", "0")
    assert proc.returncode == 1 and "launch.json is damaged: max_nodes" in proc.stderr
    assert "\x1b" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
