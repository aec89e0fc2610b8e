"""Shared fixtures. Every test gets its own RECLAUNCH_HOME so nothing touches ~/.reclaunch,
and the same host (RAM, cores, load) and the same day, so no result depends on the machine or
the date it runs on (reclaunch/host.py reads exactly these facts)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SHARED = ROOT.parent / "shared"

# The host every test plans on: a 2-core, 16 GiB machine on the day these goldens were made.
# A test about the host functions themselves unsets or overrides them.
PINNED_HOST = {"RECLAUNCH_HOST_MEMORY": "16GiB", "RECLAUNCH_HOST_CPUS": "2",
               "RECLAUNCH_TODAY": "2026-12-01", "RECLAUNCH_HOST_LOAD": "0.0"}


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("reclaunch-home")
    monkeypatch.setenv("RECLAUNCH_HOME", str(home))
    for var, value in PINNED_HOST.items():
        monkeypatch.setenv(var, value)
    # No test may reach a real cloud: blank credentials and endpoints point nowhere useful.
    for var in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                "GOOGLE_APPLICATION_CREDENTIALS", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET"):
        monkeypatch.delenv(var, raising=False)
    yield home
    _stop_watchers_started_under(home)


def _watchers_started_under(home: Path) -> list[int]:
    """Pids of detached watchers (`up --detach`) running with RECLAUNCH_HOME=home. The home is
    this test's own fresh directory, so only processes this test (or a CLI it ran) started
    match; another session's watcher or a recycled pid never does. Read from /proc (Linux);
    elsewhere nothing is found and nothing is signalled."""
    mine = f"RECLAUNCH_HOME={home}".encode()
    pids = []
    for d in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (d / "cmdline").read_bytes().split(b"\0")
            if b"reclaunch.providers.watcher" not in cmd or mine not in (d / "environ").read_bytes().split(b"\0"):
                continue
            pids.append(int(d.name))
        except (OSError, ValueError):   # gone meanwhile, or another user's
            continue
    return pids


def _gone(pid: int) -> bool:
    import os
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:   # our child: reap it
            return True
    except ChildProcessError:   # a CLI's child, reparented: gone once /proc says so
        pass
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _stop_watchers_started_under(home: Path) -> None:
    """Tests leave no watcher behind: each would poll a stopped stand-in forever."""
    import os
    import signal
    import time

    if not (home / "watch").is_dir():   # every watcher writes its pid and log there first
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = _watchers_started_under(home)
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        for _ in range(50):   # 5 s at most
            if all(_gone(p) for p in pids):
                return
            time.sleep(0.1)


@pytest.fixture
def example_paths():
    return sorted(EXAMPLES.glob("*.yaml"))


def pytest_collection_modifyitems(config, items):
    """RECLAUNCH_TEST_ORDER=reverse or shuffle:SEED runs the suite in another order, to find a
    test that depends on an earlier one or on its leftovers (issue 20). Unset: file order."""
    import os
    import random

    order = os.environ.get("RECLAUNCH_TEST_ORDER", "")
    if order == "reverse":
        items.reverse()
    elif order.startswith("shuffle:"):
        random.Random(order.partition(":")[2]).shuffle(items)
