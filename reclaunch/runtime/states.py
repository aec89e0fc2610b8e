"""The one job-state table every target maps into (Kubernetes jobs and cloud: local alike),
and `JobStatus`, what `reclaunch status` shows. Pure data."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple


class JobState(NamedTuple):
    meaning: str
    terminal: bool
    ok: bool | None      # None while it is still going


# PyTorchJob condition type (training-operator v1) -> what it means for the user. cloud: local
# maps its supervisor's states into the same keys, so status, teardown and budget read one table.
JOB_STATES: dict[str, JobState] = {
    "Pending": JobState("not submitted yet", False, None),
    "Created": JobState("accepted; pods are scheduling (nodes may still be scaling up)", False, None),
    "Running": JobState("training: every replica is running", False, None),
    "Restarting": JobState("a replica failed (spot reclaim or crash) and is restarting from the "
                           "last checkpoint", False, None),
    "Suspended": JobState("suspended: no pods run, nothing trains", False, None),
    "Succeeded": JobState("training finished successfully", True, True),
    "Failed": JobState("training failed (restarts exhausted or a fatal error)", True, False),
    # Not a PyTorchJob condition: the job was stopped on purpose (`reclaunch down`, the budget
    # guard). cloud: local reports it; neither success nor failure for the teardown policy.
    "Stopped": JobState("stopped on purpose (`reclaunch down` or the budget guard)", True, None),
    "Missing": JobState("no training job in the cluster (deleted, or never started)", False, None),
    "Unknown": JobState("the job's state could not be read", False, None),
}

TERMINAL: tuple[str, ...] = tuple(k for k, v in JOB_STATES.items() if v.terminal)
ACTIVE_STATES = ("Running", "Restarting")   # a job is using the cluster; the idle clock stops


@dataclass
class JobStatus:
    """What `reclaunch status` shows. `state` is one of JOB_STATES' keys."""

    name: str
    cloud: str
    state: str
    message: str = ""
    nodes: list[dict[str, Any]] = field(default_factory=list)    # {name, capacity_type, ready}
    pods: list[dict[str, Any]] = field(default_factory=list)     # {name, rank, phase, restarts}
    started_at: float | None = None
    elapsed_seconds: float | None = None
    spend_usd: float | None = None
    details: dict[str, Any] = field(default_factory=dict)
