"""Tests leave no detached watcher running (issue 41 follow-up): `up --detach` in a test starts
`python -m reclaunch.providers.watcher`, which polled the stopped stand-in forever, dozens per
run. The root conftest stops the watchers each test started, and only those."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LEAKY = "tests/own_cluster/test_launch.py::test_up_applies_the_launch_status_then_down_deletes_only_that"


def _watchers_under(base: Path) -> list[str]:
    found = []
    for d in Path("/proc").glob("[0-9]*"):
        try:
            if b"reclaunch.providers.watcher" not in (d / "cmdline").read_bytes():
                continue
            env = (d / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(e.startswith(f"RECLAUNCH_HOME={base}".encode()) for e in env):
            found.append(d.name)
    return found


def test_a_detached_up_in_a_test_leaves_no_watcher(tmp_path):
    base = tmp_path / "inner"
    # Looks like a watcher, but was not started by the inner run's tests: left alone.
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)",
                                  "reclaunch.providers.watcher"],
                                 env={**os.environ, "RECLAUNCH_HOME": str(base / "x")})
    try:
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            f"--basetemp={base}", LEAKY], cwd=ROOT, capture_output=True,
                           text=True, timeout=300, env=os.environ.copy())
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        left = [p for p in _watchers_under(base) if p != str(bystander.pid)]
        assert left == [], f"watchers left running: {left}"
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait(10)
        for pid in _watchers_under(base):   # a failed run: stop what it started, only that
            if pid != str(bystander.pid):
                os.kill(int(pid), 9)
