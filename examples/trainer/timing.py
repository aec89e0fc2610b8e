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
waits and DDP's last bucket). In a TorchRec train pipeline the step is one call: marks around
each loader fetch (TimedIter) and around the optimizer step (MarkedOptimizer) split it. On
CPU everything is synchronous and perf_counter is the truth.
"""
from __future__ import annotations

import time

import torch


class StepClock:
    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self.steps: list[tuple] = []
        # The compute stream, taken now (the loop's, before any pipeline runs): TorchRec's
        # train pipelines fetch the next batch inside `with torch.cuda.stream(memcpy_stream)`,
        # so a mark recorded on "the current stream" there would time the copy stream, not
        # the stream the step's kernels wait on.
        self.stream = torch.cuda.current_stream(device) if self.cuda else None

    def mark(self):
        if not self.cuda:
            return time.perf_counter()
        ev = torch.cuda.Event(enable_timing=True)
        ev.record(self.stream)
        return ev

    def add(self, marks: tuple, data, comm, wait_inside: bool = False) -> None:
        """marks: (start, data ready, fwd/bwd done, optimizer started... done, end) -- in a
        train pipeline (start, step called, optimizer step begins, ends, end); data:
        TimedIter.take() (host seconds on CPU, mark pairs around each fetch on CUDA);
        comm: CommClock.take(); wait_inside: the fetch happened between marks 1 and 2 (a
        pipeline fetches a batch ahead inside its step): it is data wait, not forward/backward."""
        self.steps.append((marks, data, comm, wait_inside))

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
        for (m0, m1, m2, m3, m4), data, comm, inside in self.steps:
            exposed = self._comm(comm)
            fetch = self._comm(data)       # seconds, or the stream's gaps around each fetch
            wait = fetch if inside or not self.cuda else self._el(m0, m1)
            fwd_bwd = self._el(m1, m2) - (fetch if inside else 0.0)
            out.append({"step_s": self._el(m0, m4), "data_wait_s": wait,
                        "fwd_bwd_s": max(0.0, fwd_bwd - exposed), "optimizer_s": self._el(m2, m3),
                        "comm_s": min(exposed, max(fwd_bwd, 0.0)) + self._el(m3, m4)})
        self.steps = []
        return out


class TimedIter:
    """The loader as an iterator, timed: on CPU the host time blocked in next(), on CUDA a
    pair of marks around each fetch (the gap is how long the stream sat idle for want of a
    batch: zero when the loader keeps ahead). `failed` keeps the error a failed fetch raised:
    the loop tells a loader that died from a failure of the step itself. `slow`: the
    slow_data drill (metrics.Fault)."""

    def __init__(self, it, slow: float, clock: StepClock):
        self.it, self.slow, self.clock, self.failed = it, slow, clock, None
        self.wait, self.pairs = 0.0, []

    def __iter__(self):
        return self

    def __next__(self):
        t0 = time.perf_counter()
        e0 = self.clock.mark() if self.clock.cuda else None
        try:
            batch = next(self.it)
        except StopIteration:
            raise
        except Exception as exc:
            self.failed = exc
            raise
        if self.slow:
            time.sleep(self.slow)
        self.wait += time.perf_counter() - t0
        if e0 is not None:
            self.pairs.append((e0, self.clock.mark()))
        return batch

    def take(self):
        """-> this step's fetches (seconds, or mark pairs on CUDA); resets."""
        out = self.pairs if self.clock.cuda else self.wait
        self.wait, self.pairs = 0.0, []
        return out


class MarkedOptimizer:
    """The optimizer a train pipeline steps, with a clock mark just before and after its
    step(): the pipeline's step is one call (zero_grad, fetch, forward, backward, optimizer),
    and without these marks the optimizer's time would land in forward/backward or, behind
    DDP's last all-reduce, in communication. Everything else goes to the optimizer itself."""

    def __init__(self, optimizer, clock: StepClock | None = None):
        self.optimizer, self.clock, self.marks = optimizer, clock, None

    def zero_grad(self, *args, **kwargs):
        return self.optimizer.zero_grad(*args, **kwargs)

    def step(self, *args, **kwargs):
        before = self.clock.mark() if self.clock else None
        out = self.optimizer.step(*args, **kwargs)
        if self.clock:
            self.marks = (before, self.clock.mark())
        return out

    def take(self):
        marks, self.marks = self.marks, None
        return marks

    def __getattr__(self, name):
        return getattr(self.optimizer, name)


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
