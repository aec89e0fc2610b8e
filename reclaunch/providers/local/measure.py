"""At the end of a local run: leave its measured samples/s for the next `plan`
(runtime/measurements.py), read from the newest part of each node's log only."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

# The interval metrics the record needs are the newest ones; a job that wrote gigabytes of
# output must not make the supervisor read them all at the end (issue 26).
TAIL_BYTES = 8 << 20
MAX_LINE = 64 << 10


def _tail_lines(path: Path) -> Iterator[str]:
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - TAIL_BYTES))
            if size > TAIL_BYTES:
                fh.readline()                     # a cut first line is not a metrics line
            for raw in fh:
                if len(raw) <= MAX_LINE:
                    yield raw.decode("utf-8", errors="replace")
    except OSError:
        return


def record(root: Path, launch: dict[str, Any], name: str, reclaims: int | None = None) -> None:
    """`reclaims`: the drills that reclaimed a node during the run (the record's conditions,
    with this host's load per core at the end: planner/measured.py weighs runs by them)."""
    from reclaunch import host
    from reclaunch.runtime.measurements import record_run

    def lines() -> Iterator[str]:
        for path in sorted((root / "nodes").glob("node-*.log")):
            yield from _tail_lines(path)
    try:   # what else loaded the host: the run's own processes are not contention
        load = host.load_per_core()
        own = int(launch.get("nodes") or 1) * int(launch.get("nproc") or 1) / host.cpu_count()
        load = None if load is None else round(max(0.0, load - own), 3)
    except Exception:  # noqa: BLE001 - a malformed RECLAUNCH_HOST_*: the record goes without it
        load = None
    record_run(launch.get("measurement_key"), lines(), name,
               conditions={"reclaims": reclaims, "load_per_core": load})
