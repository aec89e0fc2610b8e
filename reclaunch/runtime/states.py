"""The one job-state table every target maps into (Kubernetes jobs and cloud: local alike),
and `JobStatus`, what `reclaunch status` shows. Pure data."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple


class State(StrEnum):
    """A job's state (TorchX's AppState, here with the PyTorchJob condition names). A StrEnum:
    it is the string in JSON and the journal, and a typo is an AttributeError, not a new state."""

    PENDING = "Pending"
    CREATED = "Created"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    SUSPENDED = "Suspended"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    STOPPED = "Stopped"
    MISSING = "Missing"
    UNKNOWN = "Unknown"

    @classmethod
    def parse(cls, value: object) -> "State":
        """A state read from outside (the API server, a state file): unknown text is UNKNOWN."""
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


class JobState(NamedTuple):
    meaning: str
    terminal: bool
    ok: bool | None      # None while it is still going


# PyTorchJob condition type (training-operator v1) -> what it means for the user. cloud: local
# maps its supervisor's states into the same keys, so status, teardown and budget read one table.
JOB_STATES: dict[State, JobState] = {
    State.PENDING: JobState("not submitted yet", False, None),
    State.CREATED: JobState("accepted; pods are scheduling (nodes may still be scaling up)", False, None),
    State.RUNNING: JobState("training: every replica is running", False, None),
    State.RESTARTING: JobState("a replica failed (spot reclaim or crash) and is restarting from "
                               "the last checkpoint", False, None),
    State.SUSPENDED: JobState("suspended: no pods run, nothing trains", False, None),
    State.SUCCEEDED: JobState("training finished successfully", True, True),
    State.FAILED: JobState("training failed (restarts exhausted or a fatal error)", True, False),
    # Not a PyTorchJob condition: the job was stopped on purpose (`reclaunch down`, the budget
    # guard). cloud: local reports it; neither success nor failure for the teardown policy.
    State.STOPPED: JobState("stopped on purpose (`reclaunch down` or the budget guard)", True, None),
    State.MISSING: JobState("no training job in the cluster (deleted, or never started)", False, None),
    State.UNKNOWN: JobState("the job's state could not be read", False, None),
}
assert set(JOB_STATES) == set(State), "every State has its meaning"

TERMINAL: tuple[State, ...] = tuple(k for k, v in JOB_STATES.items() if v.terminal)
ACTIVE_STATES = (State.RUNNING, State.RESTARTING)   # using the cluster; the idle clock stops


@dataclass
class JobStatus:
    """What `reclaunch status` shows. `state` is a State (a plain string is parsed into one)."""

    name: str
    cloud: str
    state: State
    message: str = ""
    nodes: list[dict[str, Any]] = field(default_factory=list)    # {name, capacity_type, ready}
    pods: list[dict[str, Any]] = field(default_factory=list)     # {name, rank, phase, restarts}
    started_at: float | None = None
    elapsed_seconds: float | None = None
    spend_usd: float | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.state = State.parse(self.state)
