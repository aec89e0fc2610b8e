"""`reclaunch exec` and `reclaunch port-forward` on cloud: local: a command runs in the
environment and working directory of the rank's own training process (read from /proc, as a
pod's exec runs in its container), so it sees what the job sees (RANK, MASTER_ADDR, the
checkpoint directory, job.env). It carries the run's marker too: `down` stops it with the job.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from reclaunch.errors import UsageError
from reclaunch.providers.local import proc as lp


def _environ(pid: int) -> dict[str, str] | None:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


def _ppid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def rank_processes(name: str, rank: int) -> list[tuple[int, dict[str, str]]]:
    """The run's processes of training rank `rank` (the worker, then what it started)."""
    root = lp.cluster_dir(name)
    state = lp.read_json(root / "state.json") or {}
    if not lp.supervisor_alive(state) or state.get("state") in lp.TERMINAL:
        raise UsageError(f"local cluster {name!r} is not running (state {state.get('state')}): "
                         "exec and port-forward need a running job",
                         hint=f"`reclaunch up FILE` starts it; `reclaunch status {name}`")
    world = len(state.get("nodes") or [])
    launch = lp.read_json(root / "launch.json") or {}
    nodes, nproc = launch.get("max_nodes") or launch.get("nodes"), launch.get("nproc")
    if isinstance(nodes, int) and isinstance(nproc, int) and nodes > 0 and nproc > 0 \
            and rank >= nodes * nproc:   # no wait makes it appear: say so, not "try again"
        shown = str(rank) if len(str(rank)) <= 40 else f"{str(rank)[:20]}... ({len(str(rank))} digits)"
        raise UsageError(f"{name}: rank {shown} is out of range: the job's ranks are "
                         f"0..{nodes * nproc - 1} (up to {nodes} node(s) x {nproc} process(es))",
                         hint=f"`reclaunch status {name}` shows the nodes")
    found = []
    for pid in lp.run_pids(name):
        env = _environ(pid)
        if env and env.get("RANK") == str(rank) and "LOCAL_RANK" in env:
            found.append((pid, env))
    if not found:
        raise UsageError(f"{name}: no process of rank {rank} is running now"
                         + (f" ({world} node(s); ranks restart after a reclaim)" if world else ""),
                         hint=f"`reclaunch status {name}` shows the nodes; try again in a moment")
    pids = {p for p, _ in found}
    # the worker first: the one whose parent is not of the rank (its dataloaders inherit RANK)
    return sorted(found, key=lambda pe: (_ppid(pe[0]) in pids, pe[0]))


def run(name: str, command: list[str], *, rank: int = 0, interactive: bool = False) -> int:
    pid, env = rank_processes(name, rank)[0]
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        cwd = str(lp.cluster_dir(name))
    cmd = command or [os.environ.get("SHELL") or "/bin/sh"]
    try:
        return subprocess.run(cmd, env=env, cwd=cwd,
                              stdin=None if interactive or not command else subprocess.DEVNULL).returncode
    except FileNotFoundError:
        raise UsageError(f"exec: {cmd[0]!r} not found in rank {rank}'s PATH") from None
    except PermissionError:
        raise UsageError(f"exec: {cmd[0]!r} is not executable") from None


def listening(pids: set[int]) -> set[int]:
    """TCP ports these processes listen on (their sockets' inodes in /proc/net/tcp, tcp6)."""
    inodes: set[str] = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            f = row.split()
            if len(f) > 9 and f[3] == "0A" and f[9] in inodes:   # 0A: TCP_LISTEN
                ports.add(int(f[1].rsplit(":", 1)[1], 16))
    return ports


def forward(name: str, port: int, *, local_port: int | None = None, rank: int = 0,
            ready: Any = None, stop: Any = None, connections: int | None = None,
            on_error: Any = None) -> str | None:
    """Rank `rank` must listen on `port`. The same port here: nothing to forward (-> what to
    open); another --local-port: a relay from it (runtime/relay.py) until stopped."""
    import socket

    from reclaunch.runtime import relay

    procs = rank_processes(name, rank)
    ports = listening({p for p, _ in procs})
    if port not in ports:
        have = ", ".join(map(str, sorted(ports))) or "none"
        raise UsageError(f"{name}: rank {rank} does not listen on port {port} (it listens on: {have})",
                         hint="start the dashboard in the job first, e.g. on rank 0 only")
    if local_port in (None, port):
        return (f"rank {rank} of {name} listens on 127.0.0.1:{port} on this machine already "
                f"(cloud: local): open http://127.0.0.1:{port}; nothing to forward")
    relay.serve(lambda: (socket.create_connection(("127.0.0.1", port), timeout=10), None),
                local_port=local_port, ready=ready, stop=stop, connections=connections,
                on_error=on_error)
    return None
