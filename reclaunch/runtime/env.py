"""What the lifecycle needs from the outside world, injected: the infrastructure engine, the
cluster's Kubernetes API, capacity policy, teardown verification, clock, console and pacing.
Tests drive `up`, `down`, `status` and `logs` with fakes put here."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from reclaunch.runtime.infra import Infra
from reclaunch.runtime.journal import ClusterRecord

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan


@dataclass(frozen=True)
class Pacing:   # how often `up` and `down` look again (tests shorten these)
    measure_every_polls: int = 10   # read the master's metrics every this many job polls
    verify_attempts: int = 6        # teardown verification sweeps before it reports leftovers
    verify_wait_s: float = 30.0     # between them: ENIs and disks go a little after the rest
    api_lost_polls: int = 10        # unanswered job polls in a row before "API lost" is said


@dataclass
class Env:
    """What the lifecycle needs from the outside world."""

    infra: Infra
    kube_for: Callable[[dict[str, Any]], Any]               # stack outputs -> Kube-like
    classify: Callable[[str], str | None] = lambda text: None  # error text -> capacity kind
    fallback: Callable[["Plan", str], tuple[str, "Plan"] | None] = lambda plan, kind: None
    stop_hint: Callable[[str], str] = lambda kind: "try another region or instance type"
    verify: Callable[[ClusterRecord, bool], list[str]] = lambda rec, keep: []
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    console: Any = None
    confirm: Callable[[str], bool] | None = None            # None: ask on the TTY
    is_tty: Callable[[], bool] = lambda: sys.stdin.isatty()
    after_step: Callable[[str], None] | None = None          # test hook: raise to "crash"
    poll_seconds: float = 30.0
    pacing: Pacing = field(default_factory=Pacing)
    # plan -> schedulability rows; None: manifests.placement.for_plan (the stack's own pools)
    schedule: Callable[["Plan"], list[dict[str, Any]]] | None = None
    # What a person must do first (quotas, feature registrations, reservations bought): shown
    # with the plan, before confirmation and before anything is created.
    prerequisites: Callable[["Plan"], list[str]] = lambda plan: []
    # (plan, kube, launch, force, env) -> journal data: the Ready GPU nodes against the node
    # model, before the job starts (providers/node_check.py); raises to refuse. None: skipped.
    check_nodes: Callable[..., dict[str, Any]] | None = None

    def out(self):
        if self.console is None:
            from reclaunch.ui.console import console
            self.console = console(stderr=True)
        return self.console
