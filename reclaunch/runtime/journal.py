"""The journal: `$RECLAUNCH_HOME/journal/<name>.jsonl`, one line per lifecycle step.

Append-only and fsync'd, so whatever a crash (or Ctrl-C, or a lost laptop) interrupts, the
next `up` knows which steps already happened, `down` knows what to destroy, and `status` can
say what happened. A line is {"t": unix time, "step": ..., "outcome": ..., ...data}.

Outcomes: "start" (a step began), "ok", "failed", "skipped", "info".
The first "record" line holds what later commands need without re-planning (cloud, region,
namespace, job name, hourly price, teardown and budget settings, backend, the spec text).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Callable

from reclaunch.errors import ReclaunchError, UsageError
from reclaunch.home import private_dir, reclaunch_home  # noqa: F401  (re-exported)


@dataclass
class ClusterRecord:
    """Everything status/logs/down/watch need for a cluster, saved at `up` time."""

    name: str
    cloud: str
    region: str | None = None
    namespace: str = "reclaunch"
    job_name: str = ""
    job_kind: str = "PyTorchJob"
    nodes: int = 1
    usd_per_hour: float = 0.0
    spot: bool = False
    teardown_when: str = "on_success"
    keep_on_failure: bool = False
    idle_minutes: float = 30.0
    max_usd: float | None = None
    backend: str | None = None
    spec_path: str | None = None
    spec_text: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ClusterRecord":
        """Raises TypeError naming the field when a value has the wrong type (a hand edit, a
        damaged file): status and down must say so, not crash later on `"3" * 1.5`."""
        out = {}
        for f in fields(cls):
            if f.name not in d:
                continue
            v, want = d[f.name], _TYPES.get(str(f.type), (object,))
            if isinstance(v, bool) and bool not in want or not isinstance(v, want):
                raise TypeError(f"{f.name} is {type(v).__name__}, not {str(f.type)}")
            out[f.name] = v
        return cls(**out)


_NUM = (int, float)
_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,), "str | None": (str, type(None)), "int": (int,), "float": _NUM,
    "float | None": (*_NUM, type(None)), "bool": (bool,), "dict[str, Any]": (dict,)}


class Journal:
    def __init__(self, name: str, *, clock: Callable[[], float] = time.time):
        self.name = name
        self.clock = clock
        self.path = private_dir("journal") / f"{name}.jsonl"

    # ---- writing -------------------------------------------------------------------------
    def write(self, step: str, outcome: str, **data: Any) -> dict[str, Any]:
        entry = {"t": self.clock(), "step": step, "outcome": outcome, **data}
        line = json.dumps(entry, default=str, sort_keys=False)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (line + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        return entry

    def save_record(self, record: ClusterRecord) -> None:
        self.write("record", "info", record=asdict(record))

    # ---- reading -------------------------------------------------------------------------
    def entries(self) -> list[dict[str, Any]]:
        """Every step line. Read bounded and without blocking (read_state_file): a journal
        that is a FIFO, a link to /dev/zero or absurdly big raises DamagedState naming it."""
        from reclaunch.home import DamagedState, read_state_file

        try:
            data = read_state_file(self.path, MAX_JOURNAL)
        except DamagedState as exc:   # a FIFO, a directory, /dev/zero: named, never read
            why = exc.message.replace(f"{self.path} is damaged: ", "").replace(f"cannot read {self.path}: ", "")
            raise DamagedState(f"cannot read the journal {self.path}: {why}", hint=exc.hint) from None
        if data is None:
            return []
        out = []
        for line in data.decode("utf-8", "replace").splitlines():
            if len(line) > MAX_ENTRY:   # not a line of ours (the spec text is the longest)
                continue
            try:
                e = json.loads(line)
            except (ValueError, RecursionError):  # a torn last line from a crash mid-write
                continue
            # Anything but a step line (hand edits, another tool's file) is skipped, not fatal.
            if isinstance(e, dict) and isinstance(e.get("step"), str) and "outcome" in e:
                t = e.get("t")
                if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t < 1e11:
                    e["t"] = 0.0   # also 1e308 or NaN: no time (localtime would overflow)
                out.append(e)
        return out

    def exists(self) -> bool:
        return self.path.exists() and bool(self.entries())

    def record(self) -> ClusterRecord:
        recs = [e["record"] for e in self.entries()
                if e["step"] == "record" and isinstance(e.get("record"), dict)]
        if not recs:
            why = " (its journal holds no cluster record)" if self.path.exists() else ""
            raise UsageError(f"no cluster named {self.name!r} in {self.path.parent}{why}",
                             hint="`reclaunch status` lists known clusters")
        try:
            return ClusterRecord.from_dict(recs[-1])
        except TypeError as exc:  # a required field (cloud) is missing, or a wrong type
            why = str(exc) if "not" in str(exc) else "its record lacks the cluster's cloud"
            raise ReclaunchError(f"the journal {self.path} is damaged: {why}",
                                 hint="restore it, or find what is left with `reclaunch gc` "
                                 "and remove the file") from None

    def run(self) -> list[dict[str, Any]]:
        """The current cluster lifetime: from the first `up` after the last completed destroy
        (or, when nothing was started since, the lifetime that destroy ended)."""
        es = self.entries()
        ups = [i for i, e in enumerate(es) if e["step"] == "up" and e["outcome"] == "start"]
        downs = [i for i, e in enumerate(es) if e["step"] == "destroy" and e["outcome"] == "ok"]
        if not ups:
            return es
        last_d = downs[-1] if downs else -1
        after = [i for i in ups if i > last_d]
        if after:
            return es[after[0]:]
        prev_d = downs[-2] if len(downs) > 1 else -1
        before = [i for i in ups if prev_d < i < last_d]
        return es[before[0]:] if before else es

    def last(self, step: str) -> dict[str, Any] | None:
        for e in reversed(self.run()):
            if e["step"] == step and e["outcome"] != "start":
                return e
        return None

    def done(self, step: str) -> bool:
        """True when `step` finished ok in the current run and nothing destroyed it since."""
        last = self.last(step)
        if last is None or last["outcome"] != "ok":
            return False
        return not any(e["step"] == "destroy" and e["outcome"] == "ok" and e["t"] >= last["t"]
                       for e in self.run())

    def first_time(self, step: str, outcome: str = "ok") -> float | None:
        for e in self.run():
            if e["step"] == step and e["outcome"] == outcome:
                return e["t"]
        return None

    def explain(self, limit: int = 20) -> list[str]:
        """Human lines for `status`: what happened, newest last."""
        lines = []
        for e in self.entries()[-limit:]:
            if e["step"] == "record":
                continue
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e["t"]))
            msg = e.get("message") or e.get("error") or ""
            lines.append(f"{when}  {e['step']:<10} {e['outcome']:<8} {msg}".rstrip())
        return lines

    def interrupted(self) -> str | None:
        """The step that started but never finished (a crash or Ctrl-C), if any."""
        open_steps: dict[str, dict] = {}
        for e in self.run():
            if e["outcome"] == "start":
                open_steps[e["step"]] = e
            else:
                open_steps.pop(e["step"], None)
        open_steps.pop("up", None)
        return next(iter(open_steps), None)


MAX_JOURNAL = 64 * 2**20   # years of lifecycle steps; a bigger file is not ours
MAX_ENTRY = 4 * 2**20


def known_clusters() -> list[str]:
    """Names with a journal file; only names a cluster can have (never a path or markup)."""
    import re

    from reclaunch.clouds import CLUSTER_NAME
    d = private_dir("journal")
    return sorted(p.stem for p in d.glob("*.jsonl") if re.fullmatch(CLUSTER_NAME, p.stem))
