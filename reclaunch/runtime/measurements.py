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

from reclaunch.errors import UsageError
from reclaunch.planner import measured as meas

MAX_RECORDS = 500          # oldest go first; a record is ~1 KB
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


def save(m: meas.Measurement, where: Path | None = None) -> Path:
    """Write one record (named by its content: the same record twice is one file), then prune."""
    import json

    d = where or store()
    text = json.dumps(m.to_dict(), indent=1, sort_keys=True) + "\n"
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    stamp = m.measured_at[:19].replace(":", "").replace("-", "")
    path = d / f"{stamp}-{m.run[:40]}-{digest}.json"
    _atomic_write(path, text)
    prune(d)
    return path


def prune(d: Path, keep: int = MAX_RECORDS) -> None:
    files = sorted(d.glob("*.json"), key=lambda p: (p.stat().st_mtime, p.name))
    for p in files[:-keep] if len(files) > keep else []:
        p.unlink(missing_ok=True)


def load_all(where: Path | None = None) -> tuple[list[meas.Measurement], list[str]]:
    """(valid records, one line per file that did not validate). A damaged or foreign file
    never breaks `plan`: it is named and skipped."""
    from reclaunch.home import root

    d = where or root() / "measurements"
    out: list[meas.Measurement] = []
    bad: list[str] = []
    if not d.is_dir():
        return out, bad
    import json   # here, not at the top: `plan` with no records on disk never needs it

    for p in sorted(d.glob("*.json")):
        try:
            if p.stat().st_size > MAX_FILE_BYTES:
                raise meas.RecordError(f"larger than {MAX_FILE_BYTES} bytes")
            out.append(meas.from_dict(json.loads(p.read_text())))
        except (OSError, ValueError) as exc:   # RecordError and JSONDecodeError are ValueErrors
            bad.append(f"{p}: {exc}")
    return out, bad


def from_measured(key: dict[str, Any], m, run: str, *, source: str = "run",
                  now: datetime | None = None) -> meas.Measurement | None:
    """A record from a runtime.metrics.Measured, or None when it has no trustworthy rate."""
    lead = next((r for r in m.ranks if r.rank == 0), m.ranks[0]) if m is not None and m.ranks else None
    if m is None or not m.samples_per_s or m.samples_per_s <= 0 or lead is None \
            or lead.intervals < MIN_INTERVALS:
        return None
    when = (now or datetime.now(timezone.utc)).isoformat(timespec="seconds")
    gpn = int(key.get("gpus_per_node") or 1)
    nodes = max(1, m.world_size // gpn) if m.world_size else key.get("nodes")   # elastic: as it ran
    doc = {**key, "nodes": nodes, "samples_per_s": float(m.samples_per_s), "measured_at": when, "run": run,
           "source": source, "steps": int(m.step), "intervals": int(lead.intervals),
           "step": {k: getattr(m, k) for k in meas.PARTS}}
    return meas.from_dict(doc)


def record_run(key: dict[str, Any] | None, lines: Iterable[str], run: str, *,
               where: Path | None = None) -> Path | None:
    """Measure a run's log lines and leave its record; None when there is nothing to record.
    Never raises: a run's end must not fail over its bookkeeping."""
    if not key:
        return None
    try:
        from reclaunch.runtime.metrics import measure

        rec = from_measured(key, measure(lines), run)
        return save(rec, where) if rec is not None else None
    except Exception:  # noqa: BLE001 - bookkeeping only; the run's own outcome stands
        return None


def measurement_key(plan) -> dict[str, Any]:
    """The key a run of `plan` files its record under (saved at `up` in the journal record)."""
    return meas.key_for(plan.spec, cloud=plan.cloud, instance=plan.instance_type,
                        gpus_per_node=plan.gpus_per_node, nodes=plan.nodes,
                        sharding=meas.sharding_of(plan.sharding))


def record_cloud_job(rec, env) -> Path | None:
    """At the end of a watched cloud job: every pod's log lines -> its record. Never raises."""
    try:
        from reclaunch.runtime.observe import pod_lines

        return record_run((rec.extra or {}).get("measurement_key"), pod_lines(rec.name, env), rec.name)
    except Exception:  # noqa: BLE001 - logs gone with the cluster, an API error: no record
        return None


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

    try:
        p = Path(path)
        if p.stat().st_size > MAX_IMPORT_BYTES:
            raise UsageError(f"{path}: larger than {MAX_IMPORT_BYTES // (1 << 20)} MiB; not a measurements export")
        doc = json.loads(p.read_text())
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:   # file:line like every other input error
        raise UsageError(f"{path}:{exc.lineno}: not JSON ({exc.msg}, column {exc.colno})") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("kind") != "reclaunch-measurements":
        raise UsageError(f"{path}: kind: not a `reclaunch calibrate export` file")
    if doc.get("version") != meas.VERSION or not isinstance(doc.get("records"), list):
        raise UsageError(f"{path}: version/records: expected version {meas.VERSION} and a list of records")
    out = []
    for i, r in enumerate(doc["records"]):
        try:
            out.append(meas.from_dict(r))
        except meas.RecordError as exc:
            raise UsageError(f"{path}: records[{i}].{exc}") from None
    return out


def import_file(path: str) -> tuple[int, int]:
    """(imported, already there). All or nothing: a bad record imports none."""
    import json

    recs = read_export(path)
    same = lambda r: json.dumps({**r.to_dict(), "source": None}, sort_keys=True)  # noqa: E731
    have = {same(r) for r in load_all()[0]}
    new = 0
    for r in recs:
        if same(r) in have:
            continue
        have.add(same(r))
        imported = meas.from_dict({**r.to_dict(), "source": _import_source(r, path)})
        save(imported)
        new += 1
    return new, len(recs) - new


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
