"""Measurement records on disk: $RECLAUNCH_HOME/measurements/*.json (0600, written atomically,
at most MAX_RECORDS kept), what a finished run leaves behind, and what `plan` reads back.

Every run that prints RECLAUNCH_METRICS (the local supervisor at the end of a run, the cloud
watcher at the end of a job) calls `record_run` with the key the plan gave it at `up` time;
`plan` loads the records (`plan_context`) and passes them into the pure planner. Export/import
share them within a team; an imported file is validated strictly, record by record.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from reclaunch import host
from reclaunch.errors import UsageError
from reclaunch.planner import measured as meas

MAX_RECORDS = 500          # imported, then the oldest go first; a record is ~1 KB
MAX_SCANNED = 2 * MAX_RECORDS   # files `plan` reads at most (newest names first)
MAX_FILE_BYTES = 64 * 1024
MAX_IMPORT_BYTES = 8 * 1024 * 1024
MIN_INTERVALS = 2          # a figure from fewer logging intervals is warm-up, not a rate


def store() -> Path:
    from reclaunch.home import private_dir

    return private_dir("measurements")


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _file(m: meas.Measurement, d: Path) -> tuple[Path, str]:
    """(path, text) of a record: named by its content (the same record twice is one file);
    the run is text from anyone (`a/b`, `..`), so only [a-z0-9-] of it reaches the name."""
    import json
    import re

    text = json.dumps(m.to_dict(), indent=1, sort_keys=True) + "\n"
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    stamp = re.sub(r"[^0-9T]", "", m.measured_at[:19])
    run = re.sub(r"[^a-z0-9-]+", "_", m.run.lower())[:40]
    return d / f"{stamp}-{run}-{digest}.json", text


def save(m: meas.Measurement, where: Path | None = None) -> Path:
    """Write one record, then prune."""
    d = where or store()
    path, text = _file(m, d)
    _atomic_write(path, text)
    prune(d)
    return path


def prune(d: Path, keep: int = MAX_RECORDS) -> None:
    """Keep `keep` records: this machine's own runs before imported ones, then the newest by
    measured_at (never by file time: an import of 520 old records must not evict every run
    measured here). A file that is no record is not counted, and not ours to delete."""
    recs = _read_dir(d)[0]
    if len(recs) <= keep:
        return
    recs.sort(key=lambda pr: (not pr[1].source.startswith("import"), pr[1].measured_at, pr[0].name))
    for p, _ in recs[:-keep]:
        p.unlink(missing_ok=True)


def _read_dir(d: Path) -> tuple[list[tuple[Path, meas.Measurement]], list[str]]:
    """(path, record) of every valid file, newest names first, at most MAX_SCANNED of them;
    one line per file that is not a record. Read bounded and non-blocking (home.read_state_file):
    a FIFO, a link to /dev/zero or a huge file is named, never waited on or loaded."""
    import json

    from reclaunch.home import DamagedState, read_state_file

    out: list[tuple[Path, meas.Measurement]] = []
    bad: list[str] = []
    if not d.is_dir():
        return out, bad
    names = sorted(d.glob("*.json"), reverse=True)
    if len(names) > MAX_SCANNED:
        bad.append(f"{d}: {len(names) - MAX_SCANNED} more files not read (at most {MAX_SCANNED})")
    end = host.latest_plausible()
    for p in names[:MAX_SCANNED]:
        try:
            data = read_state_file(p, MAX_FILE_BYTES)
            if data is None:
                continue
            out.append((p, meas.from_dict(json.loads(data), not_after=end)))
        except DamagedState as exc:
            bad.append(exc.message)
        except (OSError, ValueError, RecursionError) as exc:   # RecordError, JSONDecodeError
            bad.append(f"{p}: {exc}")
    return out, bad


def load_all(where: Path | None = None) -> tuple[list[meas.Measurement], list[str]]:
    """(valid records, one line per file that did not validate). A damaged or foreign file
    never breaks `plan`: it is named and skipped."""
    from reclaunch.home import root

    found, bad = _read_dir(where or root() / "measurements")
    return sorted((m for _, m in found), key=lambda m: m.measured_at), bad


def rate_spread(m) -> float:
    """P90/P10 of the run's per-interval samples/s (rank 0's series, the first interval
    dropped as warm-up): 1.0 for a steady run, 0.0 when there are too few intervals."""
    rates = sorted(r for _, _, r in m.series[1:] if r and r > 0)
    if len(rates) < 3:
        return 0.0
    q = lambda f: rates[round(f * (len(rates) - 1))]  # noqa: E731
    return round(q(0.9) / q(0.1), 3)


def from_measured(key: dict[str, Any], m, run: str, *, source: str = "run",
                  now: datetime | None = None,
                  conditions: dict[str, Any] | None = None) -> meas.Measurement | None:
    """A record from a runtime.metrics.Measured, or None when it has no trustworthy rate.
    `conditions`: what the runner knows of the run (reclaims, load_per_core)."""
    lead = next((r for r in m.ranks if r.rank == 0), m.ranks[0]) if m is not None and m.ranks else None
    if m is None or not m.samples_per_s or m.samples_per_s <= 0 or lead is None \
            or lead.intervals < MIN_INTERVALS:
        return None
    when = (now or datetime.now(timezone.utc)).isoformat(timespec="seconds")
    gpn = int(key.get("gpus_per_node") or 1)
    nodes = max(1, m.world_size // gpn) if m.world_size else key.get("nodes")   # elastic: as it ran
    cond = conditions or {}
    doc = {**key, "nodes": nodes, "samples_per_s": float(m.samples_per_s), "measured_at": when, "run": run,
           "source": source, "steps": int(m.step), "intervals": int(lead.intervals),
           "step": {k: getattr(m, k) for k in meas.PARTS}, "rate_spread": rate_spread(m),
           "reclaims": cond.get("reclaims"), "load_per_core": cond.get("load_per_core")}
    return meas.from_dict(doc)


def record_run(key: dict[str, Any] | None, lines: Iterable[str], run: str, *,
               where: Path | None = None, conditions: dict[str, Any] | None = None) -> Path | None:
    """Measure a run's log lines and leave its record; None when there is nothing to record.
    Never raises: a run's end must not fail over its bookkeeping."""
    if not key:
        return None
    try:
        from reclaunch.runtime.metrics import measure

        rec = from_measured(key, measure(lines), run, conditions=conditions)
        return save(rec, where) if rec is not None else None
    except Exception:  # noqa: BLE001 - bookkeeping only; the run's own outcome stands
        return None


def measurement_key(plan) -> dict[str, Any]:
    """The key a run of `plan` files its record under (saved at `up` in the journal record)."""
    return meas.key_for(plan.spec, cloud=plan.cloud, instance=plan.instance_type,
                        gpus_per_node=plan.gpus_per_node, nodes=plan.nodes,
                        sharding=meas.sharding_of(plan.sharding))


# ------------------------------------------------------------------ export / import

def export(path: str) -> int:
    import json

    recs, _ = load_all()
    doc = {"kind": "reclaunch-measurements", "version": meas.VERSION,
           "records": [r.to_dict() for r in sorted(recs, key=lambda r: r.measured_at)]}
    try:
        Path(path).write_text(json.dumps(doc, indent=1) + "\n")
    except OSError as exc:
        from reclaunch.errors import output_error

        raise output_error(path, exc, flag=None) from None   # `calibrate export FILE`: no --out
    return len(recs)


def read_export(path: str) -> list[meas.Measurement]:
    """Every record of an exported file, or UsageError (exit 2) naming the first bad one."""
    import json

    from reclaunch.home import DamagedState, read_state_file

    try:   # bounded and non-blocking: a FIFO or /dev/zero is refused, not waited on
        data = read_state_file(Path(path), MAX_IMPORT_BYTES)
        if data is None:
            raise UsageError(f"{path}: no such file")
        doc = json.loads(data)
    except DamagedState as exc:
        raise UsageError(f"{exc.message.replace(' is damaged', '')}; not a measurements export") from None
    except json.JSONDecodeError as exc:   # file:line like every other input error
        raise UsageError(f"{path}:{exc.lineno}: not JSON ({exc.msg}, column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:   # not UTF-8, 10**5 levels deep
        raise UsageError(f"{path}: not JSON ({type(exc).__name__})") from None
    if not isinstance(doc, dict) or doc.get("kind") != "reclaunch-measurements":
        raise UsageError(f"{path}: kind: not a `reclaunch calibrate export` file")
    if doc.get("version") != meas.VERSION or not isinstance(doc.get("records"), list):
        raise UsageError(f"{path}: version/records: expected version {meas.VERSION} and a list of records")
    out = []
    end = host.latest_plausible()
    for i, r in enumerate(doc["records"]):
        try:
            out.append(meas.from_dict(r, not_after=end))
        except meas.RecordError as exc:
            raise UsageError(f"{path}: records[{i}].{exc}") from None
    return out


def import_file(path: str) -> tuple[int, int]:
    """(imported, already there). All or nothing: a bad record imports none, and a write that
    fails (a full disk) removes the records this import had written."""
    import json

    recs = read_export(path)
    same = lambda r: json.dumps({**r.to_dict(), "source": None}, sort_keys=True)  # noqa: E731
    have = {same(r) for r in load_all()[0]}
    d = store()
    todo: dict[Path, str] = {}
    for r in recs:
        if same(r) in have:
            continue
        have.add(same(r))
        dest, text = _file(meas.from_dict({**r.to_dict(), "source": _import_source(r, path)}), d)
        todo[dest] = text
    written: list[Path] = []
    try:
        for dest, text in todo.items():
            _atomic_write(dest, text)
            written.append(dest)
    except OSError as exc:
        for p in written:
            p.unlink(missing_ok=True)
        raise UsageError(f"{path}: nothing imported: cannot write {d}: {exc.strerror or exc}") from None
    prune(d)
    return len(todo), len(recs) - len(todo)


def _import_source(r: meas.Measurement, path: str) -> str:
    base = Path(path).name
    return r.source if r.source.startswith("import") else f"import {base}"[:200]


# ------------------------------------------------------------------ what plan passes in

def plan_context(spec, *, preflight: bool = False) -> meas.PlanContext:
    """Measured records + (cloud: local) this host's calibration + the packed job.workdir,
    for make_plan(context=...)."""
    recs, _ = load_all()
    host = host_id = note = None
    if spec.runs_here:
        from reclaunch.runtime import calibrate

        host_id = calibrate.host_id()
        host, note = calibrate.load_for_this_host()
    workdir = None
    if spec.job.workdir:   # packed here (it reads the disk), so the plan counts its upload
        from reclaunch.runtime.workdir import pack

        workdir = pack(spec)
    return meas.PlanContext(measurements=tuple(recs), host=host, host_id=host_id, host_note=note,
                            preflight=preflight, workdir=workdir)
