"""cloud: local plumbing shared by the CLI side and the supervisor: paths, state files,
process discovery, and parsing of the trainer's log lines.

Processes are found by an environment marker (RECLAUNCH_LOCAL_RUN) that every process of a
run inherits — the local analogue of the `reclaunch-cluster=<name>` tag — because torchrun
puts each worker in its own session, so process groups alone cannot reach them.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import socket
import stat
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


MAX_STATE = 16 * 2**20   # state.json, launch.json, result.json: far smaller when ours


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from `path`; None when it is missing or is anything else (`[]`, binary,
    a torn file, a FIFO, a link to /dev/zero, 10**400): one damaged file must never raise
    into `status` or `down`, nor hang or fill memory (read bounded, non-blocking)."""
    return read_json_why(path)[0]


def read_json_why(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(object, None), or (None, why it is not one); (None, None) when the file is missing."""
    from reclaunch.home import DamagedState, read_state_file

    try:
        data = read_state_file(Path(path), MAX_STATE)
    except DamagedState as exc:
        return None, exc.message.replace(f"{path} is damaged: ", "")
    if data is None:
        return None, None
    try:
        obj = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):   # UnicodeDecodeError, JSONDecodeError, 10**5000
        return None, "not valid JSON"
    return (obj, None) if isinstance(obj, dict) else (None, "not a JSON object")


def state_problem(state: dict[str, Any]) -> str | None:
    """Why a state.json written by the supervisor cannot be what it wrote (wrong types)."""
    def num(v, none_ok=True):   # finite and in a sane range: 1e308 is no unix time or pid
        return (v is None and none_ok) or (isinstance(v, (int, float)) and not isinstance(v, bool)
                                           and math.isfinite(v) and 0 <= v < 1e11)
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

_RANK = re.compile(r"^\[rank(\d{1,7})\]: ?(.*)$", re.S)
# Bounded digit runs: a progress line is short; 400 digits of "step" is not a step.
_STEP = re.compile(r"\bstep=(\d{1,15})(?!\d) loss=(\S{1,64}) samples_per_s=(\S{1,64})(?!\S)")
_DONE = re.compile(r"\bdone steps=(\d{1,15})(?!\d) final_loss=(\S{1,64}) samples_per_s=(\S{1,64})(?!\S)")
_INFO_STEPS = re.compile(r"^info model=.*\bstart_step=(\d{1,15})(?!\d) steps=(\d{1,15})(?!\d)")
_RESUMED = re.compile(r"^info resumed_from_step=(\d{1,15})(?!\d)")
_CKPT = re.compile(r"^info checkpoint step=(\d{1,15})(?!\d)")
_SIGTERM = re.compile(r"^info sigterm step=(\d{1,15})(?!\d)")

MAX_LINE = 64 * 1024        # longer log lines are cut (a job writing without newlines)
MAX_PARSED = 4096           # longer ones are never a trainer progress line
MAX_READ = 4 * 1024 * 1024  # bytes one Tail.read takes from one file: memory stays bounded
MAX_RATE = 1e12             # samples/s beyond this is garbage, not a measurement


def split_rank(line: str) -> tuple[int | None, str]:
    m = _RANK.match(line)
    return (int(m.group(1)), m.group(2)) if m else (None, line)


def _float(text: str) -> float | None:
    """A finite float, or None (`1.2.3`, `nan`, `1e999`, 400 digits: not a number here)."""
    try:
        v = float(text)
    except (ValueError, OverflowError):
        return None
    return v if math.isfinite(v) else None


def _rate(text: str) -> float | None:
    v = _float(text)
    return v if v is not None and 0 <= v <= MAX_RATE else None


def parse_line(text: str) -> dict[str, Any] | None:
    """One rank-0 trainer line (prefix removed) -> an event dict, or None.

    Never raises, whatever a job prints: a line whose numbers do not parse (`samples_per_s=
    1.2.3`), are out of range or are too long is not an event (callers count it as bad)."""
    if not isinstance(text, str) or len(text) > MAX_PARSED:
        return None
    try:
        return _parse(text)
    except (ValueError, OverflowError, TypeError):   # pragma: no cover - the bounds above
        return None


def _parse(text: str) -> dict[str, Any] | None:
    for kind, rx in (("done", _DONE), ("step", _STEP)):
        if m := rx.search(text):
            rate = _rate(m.group(3))
            if rate is None:
                return None
            return {"kind": kind, "step": int(m.group(1)), "loss": _float(m.group(2)),
                    "samples_per_s": rate}
    if m := _INFO_STEPS.search(text):
        return {"kind": "start", "start_step": int(m.group(1)), "steps": int(m.group(2))}
    if m := _RESUMED.search(text):
        return {"kind": "resumed", "step": int(m.group(1))}
    if m := _CKPT.search(text):
        return {"kind": "checkpoint", "step": int(m.group(1))}
    if m := _SIGTERM.search(text):
        return {"kind": "sigterm", "step": int(m.group(1))}
    return None


def looks_like_progress(text: str) -> bool:
    """A line that means to be a progress line (for counting the ones that did not parse)."""
    return ("step=" in text and "samples_per_s=" in text) or text.startswith("info ")


class Tail:
    """Incremental reader of several growing log files, whole lines only, bounded: at most
    MAX_READ bytes per file per call, lines cut at MAX_LINE (the rest of such a line up to
    its newline is dropped), so a job that writes without newlines cannot grow the reader.
    `tail_bytes`: start that far before the end of each file (status reads the recent part)."""

    def __init__(self, paths: Iterable[Path] = (), *, tail_bytes: int | None = None):
        self.tail_bytes = tail_bytes
        self.offsets: dict[Path, int] = {}
        self._partial: dict[Path, str] = {}
        self._skipping: set[Path] = set()
        self.cut_lines = 0
        self.bytes_read = 0
        for p in paths:
            self.add(p)

    def add(self, path: Path) -> None:
        path = Path(path)
        if path in self.offsets:
            return
        start = 0
        if self.tail_bytes is not None:
            try:
                start = max(0, os.stat(path).st_size - self.tail_bytes)
            except OSError:
                start = 0
            if start:
                self._skipping.add(path)   # the first (partial) line is not a whole line
        self.offsets[path] = start

    def drain(self) -> Iterable[tuple[Path, str]]:
        """Every whole line there is now, read MAX_READ bytes at a time (a call that only
        skips the middle of a cut line returns no lines, yet more may follow)."""
        while True:
            self.bytes_read = 0
            yield from self.read()
            if not self.bytes_read:
                return

    def read(self) -> list[tuple[Path, str]]:
        out: list[tuple[Path, str]] = []
        for path, off in list(self.offsets.items()):
            chunk = _read_regular(path, off, MAX_READ)
            if not chunk:
                continue
            self.bytes_read += len(chunk)
            self.offsets[path] = off + len(chunk)
            text = self._partial.pop(path, "") + chunk.decode("utf-8", "replace")
            lines = text.split("\n")
            last = lines.pop()
            for ln in lines:
                if path in self._skipping:      # the tail of a line already cut
                    self._skipping.discard(path)
                    continue
                out.append((path, self._cut(ln.rstrip("\r"))))
            if len(last) > MAX_LINE:
                if path not in self._skipping:
                    out.append((path, self._cut(last)))
                    self._skipping.add(path)
            elif last:
                self._partial[path] = last
        return out

    def _cut(self, line: str) -> str:
        if len(line) <= MAX_LINE:
            return line
        self.cut_lines += 1
        return line[:MAX_LINE] + f" ... (line cut at {MAX_LINE} characters)"


def _read_regular(path: Path, offset: int, limit: int) -> bytes:
    """Up to `limit` bytes of a regular file from `offset`; b"" for a missing file and for
    anything else (a FIFO would block, /dev/zero never ends)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        os.lseek(fd, offset, os.SEEK_SET)
        return os.read(fd, limit)
    except OSError:
        return b""
    finally:
        os.close(fd)


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
