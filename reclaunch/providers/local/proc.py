"""cloud: local plumbing shared by the CLI side and the supervisor: paths, state files,
process discovery, and parsing of the trainer's log lines.

Processes are found by an environment marker (RECLAUNCH_LOCAL_RUN) that every process of a
run inherits — the local analogue of the `reclaunch-cluster=<name>` tag — because torchrun
puts each worker in its own session, so process groups alone cannot reach them.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable

MARKER = "RECLAUNCH_LOCAL_RUN"        # run_marker(): "<name>@<home>:<run_id>" on every process
NODE_MARKER = "RECLAUNCH_LOCAL_NODE"  # "<name>:<run_id>:<node>:<incarnation>"
RANK_PREFIX = "[rank${rank}]: "       # torchrun's TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE

# The one job-state table (runtime/states.py): the supervisor reports its keys.
from reclaunch.runtime.states import TERMINAL  # noqa: E402,F401


def home() -> Path:
    from reclaunch.home import private_dir
    return private_dir("local")


def cluster_dir(name: str) -> Path:
    return home() / name


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from `path`; None when it is missing or is anything else (`[]`, binary,
    a torn file): one damaged file must never raise into `status` or `down`."""
    try:
        obj = json.loads(Path(path).read_text())
    except (OSError, ValueError):   # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None
    return obj if isinstance(obj, dict) else None


def state_problem(state: dict[str, Any]) -> str | None:
    """Why a state.json written by the supervisor cannot be what it wrote (wrong types)."""
    def num(v, none_ok=True):
        return (v is None and none_ok) or (isinstance(v, (int, float)) and not isinstance(v, bool))
    if not isinstance(state.get("state"), str):
        return "state is not text"
    if not isinstance(state.get("nodes", []), list) or not all(
            isinstance(n, dict) and isinstance(n.get("index"), int) and isinstance(n.get("state"), str)
            for n in state.get("nodes", [])):
        return "nodes is not a list of {index, state}"
    for key in ("progress", "failure"):
        if state.get(key) is not None and not isinstance(state.get(key), dict):
            return f"{key} is not a mapping"
    if not isinstance(state.get("preemptions", []), list) or not all(
            isinstance(r, dict) for r in state.get("preemptions", [])):
        return "preemptions is not a list"
    for key in ("started_at", "finished_at", "port", "supervisor_pid"):
        if not num(state.get(key)):
            return f"{key} is not a number"
    if not isinstance(state.get("message", ""), str):
        return "message is not text"
    return None


def supervisor_alive(state: dict[str, Any]) -> bool:
    """The supervisor named in state.json is alive *and* is still that process: its start
    time matches (ident.py), so a reused pid after a reboot or a kill -9 is not mistaken for
    it. A state.json from before identities were recorded is matched by the run marker."""
    from reclaunch.providers.local import ident

    pid = state.get("supervisor_pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    if state.get("supervisor_id"):
        return ident.alive_as(pid, state["supervisor_id"])
    return pid_alive(pid) and ident.environ_has(
        pid, f"{MARKER}={run_marker(str(state.get('name')), str(state.get('run_id')))}")


def write_json(path: Path, obj: Any) -> None:
    """Atomic: readers see the old file or the new one, never half of one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
    os.replace(tmp, path)


# ---------------------------------------------------------------- processes

def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is dead for our purposes
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError, ProcessLookupError):
        return True


def marked_pids(key: str, value_prefix: str) -> list[int]:
    """Live processes whose environment has key=value starting with value_prefix."""
    needle = f"{key}={value_prefix}".encode()
    out = []
    me = os.getpid()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            env = Path(f"/proc/{entry.name}/environ").read_bytes()
        except (OSError, ProcessLookupError):
            continue
        if any(item.startswith(needle) for item in env.split(b"\0")) and pid_alive(int(entry.name)):
            out.append(int(entry.name))
    return sorted(out)


def run_pids(name: str, run_id: str | None = None) -> list[int]:
    return marked_pids(MARKER, run_marker(name, run_id or ""))


def run_marker(name: str, run_id: str = "") -> str:
    """MARKER's value for cluster `name` of *this* RECLAUNCH_HOME (a prefix when run_id is
    empty). The same name under another home (another user, another test) is someone else's
    cluster: its processes must never be found, let alone signalled, from here."""
    import hashlib

    where = hashlib.sha1(str(cluster_dir(name).resolve()).encode()).hexdigest()[:10]
    return f"{name}@{where}:{run_id}"


def signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def kill_marked(key: str, value_prefix: str, grace: float, exclude: Iterable[int] = (),
                also: dict[int, str] | None = None) -> list[int]:
    """SIGTERM, wait up to `grace` seconds, SIGKILL what is left. -> pids still alive.

    Each pid is signalled only while its start time still matches the one seen when it was
    found (ident.py). `also`: more {pid: identity} to stop, e.g. the supervisor's descendants
    that left the run's environment behind."""
    from reclaunch.providers.local import ident

    skip = set(exclude)

    def found() -> dict[int, str]:
        procs = ident.with_identities(p for p in marked_pids(key, value_prefix) if p not in skip)
        procs.update({p: i for p, i in (also or {}).items()
                      if p not in skip and ident.alive_as(p, i)})
        return procs

    procs = found()
    ident.signal_verified(procs, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(ident.alive_as(p, i) for p, i in procs.items()):
        time.sleep(0.1)
    for _ in range(3):  # a SIGTERMed process may fork on its way out: sweep again
        left = found()
        if not left:
            return []
        ident.signal_verified(left, signal.SIGKILL)
        time.sleep(0.3)
    return sorted(found())


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


# ---------------------------------------------------------------- trainer log lines

_RANK = re.compile(r"^\[rank(\d+)\]: ?(.*)$")
_STEP = re.compile(r"\bstep=(\d+) loss=(\S+) samples_per_s=([\d.]+)")
_DONE = re.compile(r"\bdone steps=(\d+) final_loss=(\S+) samples_per_s=([\d.]+)")
_INFO_STEPS = re.compile(r"^info model=.*\bstart_step=(\d+) steps=(\d+)")
_RESUMED = re.compile(r"^info resumed_from_step=(\d+)")
_CKPT = re.compile(r"^info checkpoint step=(\d+)")
_SIGTERM = re.compile(r"^info sigterm step=(\d+)")


def split_rank(line: str) -> tuple[int | None, str]:
    m = _RANK.match(line)
    return (int(m.group(1)), m.group(2)) if m else (None, line)


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def parse_line(text: str) -> dict[str, Any] | None:
    """One rank-0 trainer line (prefix removed) -> an event dict, or None."""
    if m := _DONE.search(text):
        return {"kind": "done", "step": int(m.group(1)), "loss": _float(m.group(2)),
                "samples_per_s": float(m.group(3))}
    if m := _STEP.search(text):
        return {"kind": "step", "step": int(m.group(1)), "loss": _float(m.group(2)),
                "samples_per_s": float(m.group(3))}
    if m := _INFO_STEPS.search(text):
        return {"kind": "start", "start_step": int(m.group(1)), "steps": int(m.group(2))}
    if m := _RESUMED.search(text):
        return {"kind": "resumed", "step": int(m.group(1))}
    if m := _CKPT.search(text):
        return {"kind": "checkpoint", "step": int(m.group(1))}
    if m := _SIGTERM.search(text):
        return {"kind": "sigterm", "step": int(m.group(1))}
    return None


class Tail:
    """Incremental reader of several growing log files, whole lines only."""

    def __init__(self, paths: Iterable[Path] = ()):
        self.offsets: dict[Path, int] = {Path(p): 0 for p in paths}
        self._partial: dict[Path, str] = {}

    def add(self, path: Path) -> None:
        self.offsets.setdefault(Path(path), 0)

    def read(self) -> list[tuple[Path, str]]:
        out = []
        for path, off in list(self.offsets.items()):
            try:
                with open(path, "rb") as f:
                    f.seek(off)
                    chunk = f.read()
            except FileNotFoundError:
                continue
            if not chunk:
                continue
            self.offsets[path] = off + len(chunk)
            text = self._partial.pop(path, "") + chunk.decode("utf-8", "replace")
            lines = text.split("\n")
            if lines[-1]:
                self._partial[path] = lines[-1]
            out.extend((path, ln.rstrip("\r")) for ln in lines[:-1])
        return out


def node_log(root: Path, node: int) -> Path:
    return Path(root) / "nodes" / f"node-{node}.log"


_ROOT_CAUSE_RANK = re.compile(r"^\s*rank\s*:\s*(\d+)")


def failing_rank(lines: list[str]) -> int | None:
    """The rank torchrun's ChildFailedError report names (its 'Root Cause' block)."""
    found = None
    for line in lines:
        if m := _ROOT_CAUSE_RANK.match(split_rank(line)[1]):
            found = int(m.group(1))
    return found


def last_lines(lines: list[str], rank: int | None, n: int = 15) -> list[str]:
    if rank is not None:
        mine = [text for r, text in map(split_rank, lines) if r == rank and text.strip()]
        if mine:
            return mine[-n:]
    return [ln for ln in lines if ln.strip()][-n:]
