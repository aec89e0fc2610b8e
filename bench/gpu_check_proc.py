"""bench/gpu_check.py's plumbing: a global deadline, runs that cannot block, rows written as
they are produced. Standard library only (the GPU machine has torch, little else).

- A run's output goes to a file, never a pipe: the watcher reads what is new every 0.1 s, so no
  read can block, and a run past its timeout (or the deadline) is killed with all it started.
- Each row is appended to $OUT/gpu_check.jsonl at once (flush + fsync): a run cut short by the
  machine going away still leaves every row produced so far.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path


class Deadline:
    """The check's whole budget; each run gets what is left minus a reserve for the summary."""

    def __init__(self, seconds: float, reserve: float = 10.0):
        self.end = time.monotonic() + seconds
        self.reserve = reserve

    def left(self) -> float:
        return self.end - time.monotonic()

    def budget(self, cap: float, floor: float) -> float | None:
        """Seconds for the next run: min(cap, what is left); None when under `floor` (skip it)."""
        have = min(cap, self.left() - self.reserve)
        return have if have >= floor else None


class Rows:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.rows: list[dict] = []

    def add(self, row: dict) -> dict:
        row = {"t": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **row}
        self.rows.append(row)
        with open(self.path, "a") as f:
            f.write(json.dumps(row, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())
        return row


def _children() -> dict[int, int]:
    """pid -> parent pid of every process (Linux /proc)."""
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                out[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    return out


def descendants(pid: int) -> list[int]:
    parents = _children()
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        found += kids
        todo += kids
    return found


def kill_tree(pid: int) -> None:
    """SIGKILL a run and everything it started (torchrun puts each worker in a session of its
    own: its process group alone does not reach them). Only our own run's tree."""
    for p in [pid, *descendants(pid)]:
        try:
            os.kill(p, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class Run:
    """One process, output to `log`, watched without blocking until it exits or `timeout`."""

    def __init__(self, cmd: list[str], env: dict, log: Path, cwd: Path):
        self.log = Path(log)
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(cmd, env=env, cwd=str(cwd), stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        self.lines: list[str] = []
        self._off, self._part = 0, b""
        self.t0 = time.monotonic()

    def _read(self) -> list[str]:
        with open(self.log, "rb") as f:
            f.seek(self._off)
            chunk = f.read(1 << 20)
        self._off += len(chunk)
        *done, self._part = (self._part + chunk).split(b"\n")
        new = [b.decode("utf-8", "replace")[:4096] for b in done]
        self.lines += new
        del self.lines[:-20000]          # bounded: a run that prints forever cannot fill memory
        return new

    def watch(self, timeout: float, on_line=None) -> dict:
        """-> {exit, seconds, timed_out}; on_line(line, run) sees each line as it comes."""
        end = self.t0 + timeout
        timed_out = False
        while True:
            exited = self.proc.poll() is not None
            for line in self._read():
                if on_line:
                    on_line(strip_rank(line), self)
            if exited:
                break
            if time.monotonic() > end:
                kill_tree(self.proc.pid)
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:   # stuck in the kernel: leave it, go on with the check
                    pass
                timed_out = True
                self._read()
                break
            time.sleep(0.1)
        if self._part:
            self.lines.append(self._part.decode("utf-8", "replace")[:4096])
            self._part = b""
        return {"exit": self.proc.returncode, "seconds": round(time.monotonic() - self.t0, 2),
                "timed_out": timed_out}

    @property
    def text(self) -> str:
        return "\n".join(strip_rank(line) for line in self.lines)


def strip_rank(line: str) -> str:
    """torchrun's `[rank0]: ` prefix (on stderr lines) off."""
    if line.startswith("[rank") and "]: " in line[:16]:
        return line.split("]: ", 1)[1]
    return line


def clocks(timeout: float = 10.0) -> dict | None:
    """The GPU's clocks, power and throttle reasons now (nvidia-smi), None without one."""
    base = ("name", "clocks.sm", "clocks.max.sm", "clocks.mem", "power.draw", "temperature.gpu")
    # the throttle field's newer name first; a field the driver does not know fails the query
    for fields in (base + ("clocks_event_reasons.active",), base + ("clocks_throttle_reasons.active",), base):
        try:
            out = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.SubprocessError):
            return None
        if out.returncode == 0 and out.stdout.strip():
            return dict(zip(fields, (v.strip() for v in out.stdout.splitlines()[0].split(","))))
    return None
