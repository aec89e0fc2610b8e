"""A failure that is the same on every restart (a config error) is not worth max_restarts tries.

torchrun restarts a node's workers after each failure; its agent logs one line per failed
worker ("failed (exitcode: 1) local_rank: 0 (pid: ...)"). The supervisor feeds every log line
here; at each such line the node's attempt ends, and its signature is the exit code plus the
last line each of its ranks printed (a trainer's `error: ...`, a traceback's `ValueError: ...`).
Two attempts in a row with the same signature on one node, and no reclaim drill between them
(a reclaim makes the surviving node fail the same way each time, and that is the drill), stop
the job: `repeated()` says why. Sooner still: when every rank of the world has failed with the
same last line (an unknown trainer flag: each rank parses its arguments alone and says so), the
failure is the job's own, not a peer's or a node's, and no restart can change it; the job
stops after that first attempt.
"""

from __future__ import annotations

import re

from reclaunch.providers.local.proc import split_rank

# torch/distributed/elastic/multiprocessing/api.py, the agent's line for a failed worker.
_WORKER_FAILED = re.compile(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+)")
# Lines that are progress, not a cause: step/metrics lines and the agent's own chatter.
_NOISE = re.compile(r"^(step=|RECLAUNCH_METRICS|info |\s*$)")


class RepeatWatch:
    def __init__(self, world: int = 0) -> None:
        self.world = world                             # ranks of the job (0: not known)
        self.last: dict[int, dict[int, str]] = {}      # node -> rank -> last meaningful line
        self.attempts: dict[int, list[tuple]] = {}     # node -> signatures of ended attempts
        self.failed: dict[int, str] = {}               # rank -> its last line when it failed
        self.found: tuple[int, str] | None = None      # (node, the repeated line)
        self.everywhere = False                        # found on every rank at once

    @classmethod
    def of(cls, launch: dict) -> "RepeatWatch":
        """For a run's launch.json: its world is nodes x processes per node."""
        return cls(int(launch.get("nodes") or 0) * int(launch.get("nproc") or 1))

    def feed(self, node: int, line: str) -> None:
        rank, text = split_rank(line.rstrip("\n"))
        if rank is not None:
            if not _NOISE.match(text):
                self.last.setdefault(node, {})[rank] = text.strip()
            return
        m = _WORKER_FAILED.search(text)
        if not m:
            return
        lines = self.last.pop(node, {})
        self.failed.update(lines)
        # One rank alone proves nothing (a single-process job may fail once by chance).
        if (self.world >= 2 and self.found is None and len(self.failed) >= self.world
                and len(set(self.failed.values())) == 1):
            self.found, self.everywhere = (node, next(iter(self.failed.values()))), True
        sig = (m.group(1), tuple(sorted(set(lines.values()))))
        seen = self.attempts.setdefault(node, [])
        if seen and seen[-1][0] == m.group(1) and self._same_attempt(seen[-1], sig):
            return      # another worker of the same attempt (nproc > 1): one attempt, one entry
        seen.append(sig)
        if len(seen) >= 2 and seen[-1] == seen[-2] and sig[1] and self.found is None:
            self.found = (node, sig[1][-1])

    @staticmethod
    def _same_attempt(prev: tuple, sig: tuple) -> bool:
        # Workers of one attempt report one after another; the later ones had their lines
        # popped with the first, so they arrive with none.
        return not sig[1]

    def reclaimed(self) -> None:
        """A reclaim drill started: what fails next is the drill's doing, not a repeat."""
        self.attempts.clear()
        self.last.clear()
        self.failed.clear()

    def repeated(self) -> str | None:
        if self.found is None:
            return None
        node, line = self.found
        if self.everywhere:
            return (f"every rank ({len(self.failed)} of {self.world}) failed the same way on its "
                    f"first attempt: {line[:300]}; a config error fails every restart, so "
                    "reclaunch stopped instead of retrying up to job.max_restarts")
        return (f"the same failure on two attempts in a row (node {node}): {line[:300]}; "
                "a config error fails every restart, so reclaunch stopped instead of retrying "
                "up to job.max_restarts")


def stop_if_repeated(sup) -> None:
    """The supervisor's hook: a repeat found, the job ends Failed with why and the lines."""
    from reclaunch.providers.local import proc as lp

    why = sup.repeat.repeated()
    if not why or sup.state in lp.TERMINAL:
        return
    node = sup.repeat.found[0]
    lines = sup.node_lines.get(node, [])
    rank = next((r for r, _ in map(lp.split_rank, reversed(lines)) if r is not None), None)
    sup.failure = {"node": node, "exit_code": None, "rank": rank, "repeated": True,
                   "last_lines": lp.last_lines(lines, rank)}
    sup.finish("Failed", why)
