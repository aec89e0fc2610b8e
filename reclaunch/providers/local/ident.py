"""Who a pid is, before reclaunch signals it.

A pid alone names nothing for long: after a reboot, or once the supervisor is gone, the pid
in state.json may belong to any process. So a process of ours is identified by its pid *and*
its start time (field 22 of /proc/<pid>/stat, clock ticks since boot) plus the boot id, and
every signal goes out only after that identity is re-read and matches. Processes that left
the tree (a job that daemonizes with setsid and clears its environment) are still found as
descendants of the supervisor, which is a child subreaper: orphans are reparented to it.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Iterable


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat split after the command name (which may hold spaces and ')')."""
    try:
        text = Path(f"/proc/{int(pid)}/stat").read_text()
    except (OSError, ValueError):
        return None
    return text.rsplit(")", 1)[1].split()


def start_ticks(pid: int) -> int | None:
    fields = _stat(pid)
    try:  # fields[0] is field 3 (state): starttime, field 22, is fields[19]
        return int(fields[19]) if fields else None
    except (IndexError, ValueError):
        return None


def identity(pid: int | None) -> str | None:
    """'<boot id>:<start ticks>' of a live pid, or None."""
    if not pid:
        return None
    ticks = start_ticks(pid)
    return None if ticks is None else f"{boot_id()}:{ticks}"


def ppid(pid: int) -> int | None:
    fields = _stat(pid)
    try:
        return int(fields[1]) if fields else None
    except (IndexError, ValueError):
        return None


def is_zombie(pid: int) -> bool:
    fields = _stat(pid)
    return bool(fields) and fields[0] in ("Z", "X")


def alive_as(pid: int | None, ident: str | None) -> bool:
    """True only when `pid` is alive, not a zombie, and still the process `ident` named."""
    if not pid or not ident:
        return False
    return identity(pid) == ident and not is_zombie(pid)


def environ_has(pid: int, entry: str) -> bool:
    """`KEY=value` is in the environment the process started with."""
    try:
        env = Path(f"/proc/{int(pid)}/environ").read_bytes()
    except (OSError, ValueError):
        return False
    return entry.encode() in env.split(b"\0")


def descendants(pid: int) -> dict[int, str]:
    """Every live descendant of `pid` -> its identity (one scan of /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            parent = ppid(int(entry.name))
            if parent is not None:
                children.setdefault(parent, []).append(int(entry.name))
    out: dict[int, str] = {}
    seen: set[int] = set()
    todo = list(children.get(pid, []))
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        todo += children.get(p, [])
        ident = identity(p)
        if ident and not is_zombie(p):   # a zombie is dead: its parent only has to reap it
            out[p] = ident
    return out


def signal_verified(procs: dict[int, str], sig: int) -> list[int]:
    """Signal each pid whose identity still matches; -> the pids signalled. A pid that now
    names another process (it exited and the number was reused) is left alone."""
    sent = []
    for pid, ident in procs.items():
        if pid == os.getpid() or not alive_as(pid, ident):
            continue
        try:
            os.kill(pid, sig)
            sent.append(pid)
        except (ProcessLookupError, PermissionError):
            pass
    return sent


def stop_all(procs: dict[int, str], grace: float) -> list[int]:
    """SIGTERM, up to `grace` seconds, SIGKILL; -> pids (of these identities) still alive."""
    signal_verified(procs, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive_as(p, i) for p, i in procs.items()):
        time.sleep(0.1)
    signal_verified(procs, signal.SIGKILL)
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline and any(alive_as(p, i) for p, i in procs.items()):
        time.sleep(0.05)
    return sorted(p for p, i in procs.items() if alive_as(p, i))


def with_identities(pids: Iterable[int]) -> dict[int, str]:
    return {p: i for p in pids if (i := identity(p))}
