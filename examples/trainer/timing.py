"""Step timing that tells GPU time from host time, synchronising only on logging steps (issue 22).

On CUDA the host runs ahead of the GPU: CPU timers around asynchronous work measure how long
the host took to ENQUEUE it, and whatever finally waits (the loop's per-step flags read) soaks
up all the GPU time -- `diagnose` would call every GPU run communication-bound. Here each step
records CUDA events at its boundaries (start, batch ready, forward/backward done, optimizer
done, flags collective done) on the compute stream, and the window's events are resolved
(one synchronize of the last event) only when a metrics line is written. An event gap is the
time the STREAM spent between two points: data_wait_s is the time the GPU sat idle waiting for
the host to hand it the next batch (zero when the loader keeps up), comm_s the time the compute
stream was blocked on a collective (CommClock records event pairs around TorchRec's awaitable
waits and DDP's last bucket). On CPU everything is synchronous and perf_counter is the truth.
"""
from __future__ import annotations

import time

import torch


class StepClock:
    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self.steps: list[tuple] = []

    def mark(self):
        if not self.cuda:
            return time.perf_counter()
        ev = torch.cuda.Event(enable_timing=True)
        ev.record()
        return ev

    def add(self, marks: tuple, host_wait: float, comm, wait_inside: bool = False) -> None:
        """marks: (start, data ready, fwd/bwd done, optimizer done, end); comm: CommClock.take();
        wait_inside: the host's batch wait happened between marks 1 and 2 (a train pipeline
        fetches inside its step), so on CPU it is taken out of fwd_bwd_s."""
        self.steps.append((marks, host_wait, comm, wait_inside))

    @staticmethod
    def _el(a, b) -> float:
        if isinstance(a, float):
            return max(0.0, b - a)
        return max(0.0, a.elapsed_time(b) / 1000.0)

    def _comm(self, comm) -> float:
        if isinstance(comm, (int, float)):
            return float(comm)
        return sum(self._el(a, b) for a, b in comm)

    def resolve(self) -> list[dict]:
        """-> one dict of parts per recorded step (synchronises once on CUDA); clears the window."""
        if self.cuda and self.steps:
            self.steps[-1][0][-1].synchronize()
        out = []
        for (m0, m1, m2, m3, m4), host_wait, comm, inside in self.steps:
            exposed = self._comm(comm)
            fwd_bwd = self._el(m1, m2) - (host_wait if inside and not self.cuda else 0.0)
            out.append({"step_s": self._el(m0, m4),
                        "data_wait_s": self._el(m0, m1) if self.cuda else host_wait,
                        "fwd_bwd_s": max(0.0, fwd_bwd - exposed), "optimizer_s": self._el(m2, m3),
                        "comm_s": min(exposed, fwd_bwd) + self._el(m3, m4)})
        self.steps = []
        return out


class LaggedFlags:
    """The per-step agreement (stop requested, checkpoint due) without a per-step device sync.

    One rank: nothing to agree on, the local values are used at once. Several ranks on CPU
    (gloo): all-reduced and read at once. On CUDA, step s writes its values into a pinned host
    buffer, copies them to the device without blocking (a `torch.tensor(..., device="cuda")`
    would be a synchronous pageable copy: the very sync this avoids), all-reduces them there and
    copies the result back into pinned memory behind an event; the loop reads step s's result at
    the end of step s+1, when that copy has long finished (the GPU is busy with step s+1). Two
    buffer slots suffice: slot s%2 is read at step s+1, before step s+2 reuses it. Every rank
    reads the same reduced values at the same step, so all leave the loop together, one step
    after the request (a SIGTERM handler only sets a flag; the grace period is minutes)."""

    def __init__(self, device: torch.device, world_size: int):
        self.cuda, self.world, self.device = device.type == "cuda", world_size, device
        self.pending = None
        self.n = 0
        if self.cuda and world_size > 1:
            self.src = [torch.zeros(2, pin_memory=True) for _ in range(2)]
            self.dst = [torch.zeros(2, pin_memory=True) for _ in range(2)]

    def push(self, values: list[float]):
        """-> agreed values now (one rank, CPU), or those of the previous step (CUDA), or None."""
        import torch.distributed as dist

        if self.world <= 1:
            return list(values)
        if not self.cuda:
            flags = torch.tensor(values)
            dist.all_reduce(flags)
            return flags.tolist()
        slot = self.n % 2
        self.n += 1
        self.src[slot].copy_(torch.tensor(values))
        flags = self.src[slot].to(self.device, non_blocking=True)
        dist.all_reduce(flags)
        self.dst[slot].copy_(flags, non_blocking=True)
        ev = torch.cuda.Event()
        ev.record()
        prev, self.pending = self.pending, (slot, ev)
        if prev is None:
            return None
        prev[1].synchronize()
        return self.dst[prev[0]].tolist()

    def flush(self):
        """The last pushed values (synchronises); None if none pending."""
        if self.pending is None:
            return None
        slot, ev = self.pending
        self.pending = None
        ev.synchronize()
        return self.dst[slot].tolist()
