"""What `up` was asked for, as one typed value every provider's `up` takes (issue 23: nine
loose keywords, two of them one bit, became this)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class UpOptions:
    yes: bool = False                 # no confirmation prompt
    force: bool = False               # start although the plan is over budget
    preflight: bool = False           # run the NCCL all-reduce preflight before the job
    # `--watch/--detach`, one bit: follow the job here to its end and apply teardown.when, or
    # start it and leave the following to a watcher (clouds: a detached watcher process;
    # cloud: local: its supervisor, which always runs detached).
    detach: bool = False
    backend: str | None = None        # Pulumi state backend URL (clouds only)
    spec_path: str | None = None      # the cluster.yaml it came from (journal, adopt, hints)
    fresh: bool = False               # cloud: local: train again after a finished run
    on_started: Callable[[], None] | None = None   # once the job runs (the CLI's lock release)

    @property
    def watch(self) -> bool:
        return not self.detach
