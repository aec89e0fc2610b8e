"""Issue 15 on cloud: local, with real processes: no stray kills, nothing outlives `down`, no
second run of a finished job, owner-only files, no checkpoint on the host's /data."""

from __future__ import annotations

import io
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reclaunch import host
from reclaunch.errors import UsageError
from reclaunch.providers.local import ident
from reclaunch.providers.local import proc as lp

from tests.local.waiting import wait_for  # noqa: E402
from reclaunch.providers.options import UpOptions


def _quiet():
    from rich.console import Console

    return Console(file=io.StringIO())


@pytest.fixture
def stranger():
    """A process reclaunch did not start (no run marker): it must survive everything below."""
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield p
    p.kill()
    p.wait(10)


def _fake_state(home: Path, name: str, **state) -> Path:
    root = home / "local" / name
    root.mkdir(parents=True, exist_ok=True)
    doc = {"name": name, "run_id": "r1", "state": "Running", "nodes": [], "message": ""}
    doc.update(state)
    (root / "state.json").write_text(json.dumps(doc))
    return root


@pytest.mark.parametrize("recorded", ["wrong start time", "no identity (old state file)"])
def test_a_reused_supervisor_pid_is_never_signalled(home, provider, stranger, recorded):
    # After a reboot or a kill -9 the recorded pid belongs to someone else.
    sid = f"{ident.boot_id()}:1" if recorded == "wrong start time" else None
    _fake_state(home, "ghost", supervisor_pid=stranger.pid, supervisor_id=sid)
    st = provider.status("ghost")
    assert st.state == "Failed" and "supervisor died" in st.message
    assert not st.details["supervisor_alive"]
    provider.down("ghost", yes=True)
    time.sleep(0.3)
    assert stranger.poll() is None, "down signalled a process it did not start"
    assert not (home / "local" / "ghost").exists()


def test_identity_matches_only_the_same_process(stranger):
    me = ident.identity(stranger.pid)
    assert me and ident.alive_as(stranger.pid, me)
    boot, ticks = me.rsplit(":", 1)
    assert not ident.alive_as(stranger.pid, f"{boot}:{int(ticks) + 1}")
    assert ident.signal_verified({stranger.pid: f"{boot}:{int(ticks) + 1}"}, signal.SIGTERM) == []
    assert stranger.poll() is None


@pytest.mark.parametrize("content", [b"{}", b"[]", b"\xff\xfe\x00binary", b"{\"state\": 5}",
                                     b'{"state": "Running", "nodes": "x"}',
                                     b'{"state": "Running", "started_at": "yesterday"}'])
def test_unreadable_state_is_shown_not_raised(home, provider, content):
    root = _fake_state(home, "bad")
    (root / "state.json").write_bytes(content)
    st = provider.status("bad")
    assert st.state == "Unknown"
    assert f"unreadable state ({root / 'state.json'})" in st.message


def test_local_down_without_tty_or_yes_deletes_nothing(home, provider):
    root = _fake_state(home, "keepme", state="Succeeded")
    (root / "ckpt").mkdir()
    (root / "ckpt" / "step-10.pt").write_bytes(b"x")
    with open(os.devnull) as devnull:
        old = sys.stdin
        sys.stdin = devnull              # not a TTY
        try:
            with pytest.raises(UsageError, match="refusing without confirmation") as exc:
                provider.down("keepme")
        finally:
            sys.stdin = old
    assert exc.value.exit_code == 2
    assert (root / "ckpt" / "step-10.pt").exists() and (root / "state.json").exists()


DAEMON = ("import os, subprocess, sys, time\n"
          "p = subprocess.Popen(['setsid', 'sleep', '300'], env={'PATH': os.environ['PATH']},\n"
          "                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)\n"
          "open(sys.argv[1] + '.tmp', 'w').write(str(p.pid))\n"
          "os.replace(sys.argv[1] + '.tmp', sys.argv[1])\n"
          "time.sleep(300)\n")


def start_daemon(provider, helpers, tmp_path, name: str) -> int:
    """Start a one-node job `name` whose trainer leaves a setsid daemon with a clean
    environment behind (DAEMON); return the daemon's pid once it is written."""
    pid_file = tmp_path / "daemon.pid"
    spec = helpers.make_spec(name, command=["python", "-c", DAEMON], args=[str(pid_file)],
                             nodes=1, min_nodes=1, max_nodes=1, teardown="never")
    provider.up(helpers.local_plan(spec), UpOptions(detach=True), cwd=str(helpers.REPO))
    return int(wait_for(lambda: pid_file.exists() and pid_file.read_text(), 60, "the daemon"))


@pytest.mark.timeout(120)
def test_a_job_that_daemonizes_with_a_clean_environment_does_not_survive_down(
        home, provider, helpers, tmp_path):
    pid = start_daemon(provider, helpers, tmp_path, "daemon")
    who = ident.identity(pid)
    try:
        assert who and not lp.run_pids("daemon").count(pid), "the daemon must carry no run marker"
        provider.down("daemon", yes=True)
        assert not ident.alive_as(pid, who), "a setsid daemon of the job outlived `down`"
        assert lp.run_pids("daemon") == []
    finally:
        ident.signal_verified({pid: who}, signal.SIGKILL) if who else None


@pytest.mark.timeout(150)
def test_second_up_after_success_says_finished_and_fresh_starts_over(home, provider, helpers):
    cmd = ["python", "-c", "import os, pathlib; d = pathlib.Path(os.environ['CHECKPOINT_DIR']); "
           "(d / 'step-1.pt').write_bytes(b'x'); (d / 'log.txt').write_text('ok')"]
    spec = helpers.make_spec("twice", command=cmd, args=[], nodes=1, min_nodes=1, max_nodes=1)
    plan = helpers.local_plan(spec)
    st = provider.up(plan, cwd=str(helpers.REPO), console=_quiet())
    assert st.state == "Succeeded", st.message
    root = home / "local" / "twice"
    first = json.loads((root / "state.json").read_text())["run_id"]
    # A run its teardown took down trains afresh (test_newcomer_local.py); one that was not
    # (its supervisor died before tearing down) still answers "already finished".
    wait_for(lambda: not lp.run_pids("twice"), 30, "the torn-down supervisor to exit")
    state = json.loads((root / "state.json").read_text())
    lp.write_json(root / "state.json", {**state, "torn_down": False})

    again = provider.up(plan, cwd=str(helpers.REPO), console=_quiet())
    assert again.details.get("already_finished") and "already finished" in again.message
    assert "--fresh" in again.message
    assert json.loads((root / "state.json").read_text())["run_id"] == first   # nothing ran
    assert lp.run_pids("twice") == []

    fresh = provider.up(plan, UpOptions(fresh=True), cwd=str(helpers.REPO), console=_quiet())
    assert fresh.state == "Succeeded"
    assert json.loads((root / "state.json").read_text())["run_id"] != first

    # Everything under RECLAUNCH_HOME is owner-only: run dir, logs, checkpoints, state.
    loose = [f"{p} {oct(p.stat().st_mode & 0o777)}" for p in [home, *home.rglob("*")]
             if not p.is_symlink() and p.stat().st_mode & 0o077]
    assert not loose, loose
    ckpt = Path(json.loads((root / "launch.json").read_text())["env"]["CHECKPOINT_DIR"])
    assert ckpt.is_relative_to(root) and (ckpt / "step-1.pt").exists()
    assert stat.S_IMODE((ckpt / "step-1.pt").stat().st_mode) == 0o600
    provider.down("twice", yes=True)


def test_default_checkpoint_dir_is_never_the_hosts_data(home, helpers):
    from reclaunch.providers.local.provider import _checkpoint_dir

    spec = helpers.make_spec("nodata")
    spec.storage.kind = "none"
    root = home / "local" / "nodata"
    assert _checkpoint_dir(spec, root, "/data/ckpt") == str(root / "ckpt")
    assert _checkpoint_dir(spec, root, "/data") == str(root)
    assert _checkpoint_dir(spec, root, str(root / "data" / "ckpt")) == str(root / "data" / "ckpt")
    assert _checkpoint_dir(spec, root, "/scratch/mine") == "/scratch/mine"   # the user's choice


def test_too_many_local_processes_for_this_machine_is_exit_2(provider, helpers):
    cores = host.cpu_count()
    n = 4 * cores + 1
    spec = helpers.make_spec("crowd", nodes=n, min_nodes=1, max_nodes=n)
    with pytest.raises(UsageError, match=rf"{n} training processes on {cores} CPU") as exc:
        provider.check_ready(helpers.local_plan(spec))
    assert exc.value.exit_code == 2


def test_the_same_name_under_another_home_is_someone_elses(tmp_path, monkeypatch):
    """Another user's (or another test run's) cluster of the same name is never found here."""
    from reclaunch.providers.local import teardown

    monkeypatch.setenv("RECLAUNCH_HOME", str(tmp_path / "a"))
    marker = lp.run_marker("same", "r1")
    theirs = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                              env={**os.environ, lp.MARKER: marker})
    try:
        assert wait_for(lambda: theirs.pid in lp.run_pids("same"), 10, "the marker")
        monkeypatch.setenv("RECLAUNCH_HOME", str(tmp_path / "b"))
        assert lp.run_pids("same") == []
        assert teardown.stop("same", {}, 1.0) == []
        assert theirs.poll() is None
    finally:
        theirs.kill()
        theirs.wait(10)
