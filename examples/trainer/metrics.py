"""What the trainer measures, one `RECLAUNCH_METRICS {json}` line per rank per logging interval
(described in this folder's README, "Output"; read by `reclaunch diagnose`), and the drill knob
RECLAUNCH_FAULT that plants a fault on purpose so diagnose can be tested against it.
"""
from __future__ import annotations

import glob
import json
import math
import os
import re
import resource
import sys
import time

import torch
import torch.distributed as dist

PREFIX = "RECLAUNCH_METRICS "
PARTS = ("data_wait_s", "fwd_bwd_s", "optimizer_s", "comm_s")


class Interval:
    """Per-step sums of the step's parts, reset at each metrics line."""

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.steps = 0
        self.sums = dict.fromkeys(("step_s", *PARTS), 0.0)
        self.t0 = time.monotonic()

    def add(self, **parts: float) -> None:
        for k, v in parts.items():
            self.sums[k] += v


def peak_memory(device: torch.device) -> tuple[int, str]:
    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device)), "cuda"
    # ru_maxrss is KiB on Linux (bytes on macOS)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss if sys.platform == "darwin" else rss * 1024), "rss"


# NCCL's INFO init lines (nccl src/transport/*.cc, src/init.cc), e.g.
#   NCCL INFO Using network IB | Socket | AWS Libfabric | gIB
#   NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA
#   NCCL INFO Channel 00 : 0[0] -> 1[1] via P2P/IPC | via SHM/direct/direct
_VIA = re.compile(r"\bvia (NET/[^/\s]+(?: [^/\s]+)?|P2P|SHM)(\S*)")
_USING = re.compile(r"NCCL INFO Using network (.+?)\s*$")
_NET_NAMES = {"IB": "NET/IB", "Socket": "NET/Socket", "AWS Libfabric": "NET/OFI", "Libfabric": "NET/OFI",
              "OFI": "NET/OFI", "gIB": "NET/gIB"}


def _net(name: str) -> str:
    name = name.strip()
    return _NET_NAMES.get(name, "NET/OFI" if "fabric" in name.lower() or "ofi" in name.lower() else f"NET/{name}")


def parse_nccl(lines) -> tuple[str | None, bool | None]:
    """-> (transport, gdr). The inter-node transport wins (NET/...), else P2P, else SHM."""
    net = using = None
    gdr = None
    local = set()
    for line in lines:
        if m := _USING.search(line):
            using = _net(m.group(1))
        for m in _VIA.finditer(line):
            kind, rest = m.group(1), m.group(2)
            if kind.startswith("NET/"):
                net = _net(kind[4:])
                gdr = gdr or "GDRDMA" in rest
            else:
                local.add(kind)
    transport = net or using or ("P2P" if "P2P" in local else "SHM" if "SHM" in local else None)
    if transport and transport.startswith("NET/") and gdr is None and net is None:
        gdr = None          # "Using network" alone says nothing about GPUDirect
    return transport, gdr


def setup_nccl_log(environ=os.environ) -> str | None:
    """Ask NCCL (before init) for its INIT/NET info lines in a file we parse once.
    Left alone when the user set NCCL_DEBUG_FILE (then we read theirs) or NCCL_DEBUG at all
    (their level and their stderr stay theirs: we then learn the transport only if they chose INFO
    into a file)."""
    if environ.get("NCCL_DEBUG_FILE"):
        return environ["NCCL_DEBUG_FILE"]
    if environ.get("NCCL_DEBUG"):
        return None
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"reclaunch-nccl.{os.getpid()}.%h.%p.log")
    environ["NCCL_DEBUG_FILE"] = path
    environ["NCCL_DEBUG"] = "INFO"
    environ.setdefault("NCCL_DEBUG_SUBSYS", "INIT,NET")
    return path


class NcclProbe:
    def __init__(self, pattern: str | None):
        self.pattern, self.result = pattern, None

    def get(self) -> tuple[str | None, bool | None]:
        if self.result is not None or not self.pattern:
            return self.result or (None, None)
        lines = []
        for path in glob.glob(self.pattern.replace("%h", "*").replace("%p", "*")):
            try:
                with open(path, errors="replace") as f:
                    lines += f.readlines()
            except OSError:
                pass
        transport, gdr = parse_nccl(lines)
        if transport:                # NCCL connects lazily: keep looking until it has
            self.result = (transport, gdr)
            for line in lines:       # our file swallowed NCCL's warnings: pass them on
                if " NCCL WARN " in line:
                    print(line.rstrip(), file=sys.stderr, flush=True)
        return transport, gdr


def line(**fields) -> str:
    """One metrics line; NaN/inf become null (JSON has no NaN) with loss_nan: true."""
    doc = {"v": 1}
    for k, v in fields.items():
        if isinstance(v, float) and not math.isfinite(v):
            if k == "loss":
                doc["loss_nan"] = True
            v = None
        elif isinstance(v, float):
            v = round(v, 6)
        doc[k] = v
    return PREFIX + json.dumps(doc, separators=(",", ":"), allow_nan=False)


class CommClock:
    """Exposed communication, in seconds, accumulated until `take()`.

    What is timed (wall time the training thread is BLOCKED on communication, not the time a
    collective is in flight behind compute):
    - TorchRec's sparse input dist (KJT all-to-all: the `input_dist` call and its awaitable
      waits) and output dist (pooled-embedding all-to-all: the wait of the awaitable
      `compute_and_output_dist` returns) of every sharded module, forward pass;
    - the tail of DDP's dense-gradient all-reduce: from the launch of the last bucket (backward
      compute is done by then) to its completion (a DDP comm hook);
    - the loop's own per-step all-reduce (loss, stop and checkpoint flags).
    The backward all-to-all of the embedding gradients runs inside autograd and cannot be
    separated from compute without a profiler: it stays in fwd_bwd_s.
    On CUDA (cuda=True) host timers would only see the enqueue: each wait instead records a
    pair of CUDA events on the current stream (the gap is how long the stream was blocked on
    the collective), DDP's hook an event at the last bucket's launch paired with the end of
    backward, and take() returns the pairs for timing.StepClock to resolve on logging steps.
    """

    def __init__(self, cuda: bool = False):
        self.cuda = cuda
        self.total = 0.0
        self.pairs: list = []
        self.last_launch = self.last_done = None

    def add(self, seconds: float) -> None:
        self.total += seconds

    def _event(self):
        ev = torch.cuda.Event(enable_timing=True)
        ev.record()
        return ev

    def take(self, end=None):
        """-> seconds (CPU) or [(event, event)] (CUDA; `end`: the end-of-backward event)."""
        if self.cuda:
            pairs = self.pairs + ([(self.last_launch, end)] if self.last_launch is not None and end is not None else [])
            self.pairs, self.last_launch = [], None
            return pairs
        if self.last_launch is not None and self.last_done is not None:
            self.total += max(0.0, self.last_done - self.last_launch)
        self.last_launch = self.last_done = None
        out, self.total = self.total, 0.0
        return out

    def time_awaitable(self, aw):
        from torchrec.distributed.types import Awaitable  # only the torchrec engine gets here

        if not isinstance(aw, Awaitable):
            return aw
        inner = aw._wait_impl

        def timed():
            if self.cuda and torch.cuda.current_stream() != torch.cuda.default_stream():
                return self.time_awaitable(inner())   # a train pipeline's side stream: overlapped, not exposed
            if self.cuda:
                e0 = self._event()
                out = inner()
                self.pairs.append((e0, self._event()))
                return self.time_awaitable(out)
            t0 = time.perf_counter()
            out = inner()
            self.total += time.perf_counter() - t0
            return self.time_awaitable(out)

        aw._wait_impl = timed  # instance attribute: Awaitable.wait() calls self._wait_impl()
        return aw

    def instrument(self, module) -> None:
        """Time a TorchRec ShardedModule's input and output dists (instance attributes)."""
        in_dist, out_dist = module.input_dist, module.compute_and_output_dist

        def input_dist(*a, **kw):
            if self.cuda:   # the splits all-to-all is launched here; its wait is timed below
                return self.time_awaitable(in_dist(*a, **kw))
            t0 = time.perf_counter()
            aw = in_dist(*a, **kw)
            self.total += time.perf_counter() - t0
            return self.time_awaitable(aw)

        def compute_and_output_dist(*a, **kw):  # the call is the lookup; the wait is the comm
            return self.time_awaitable(out_dist(*a, **kw))

        module.input_dist, module.compute_and_output_dist = input_dist, compute_and_output_dist

    def ddp_hook(self, group):
        def hook(_state, bucket):
            self.last_launch = self._event() if self.cuda else time.perf_counter()
            buf = bucket.buffer().div_(dist.get_world_size(group))
            fut = dist.all_reduce(buf, group=group, async_op=True).get_future()

            def done(f):
                self.last_done = time.perf_counter()
                return f.value()[0]
            return fut.then(done)
        return hook


def short(text: str, limit: int = 200) -> str:
    """The first line of an error, bounded: a log line, not a traceback."""
    first = (str(text).strip().splitlines() or [""])[0]
    return first if len(first) <= limit else first[:limit] + "..."


def write_line(text: str) -> None:
    """One write() of the whole line: ranks sharing a pipe never interleave inside a line
    (POSIX makes pipe writes up to PIPE_BUF = 4096 bytes atomic)."""
    data = (text + "\n").encode()
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):   # a captured/replaced stdout
        fd = None
    sys.stdout.flush()
    if fd is None:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    else:
        os.write(fd, data)


class Fault:
    """RECLAUNCH_FAULT drill knob (tests of `reclaunch diagnose` only; comma-separated):
        slow_data:SECONDS          every batch fetch sleeps SECONDS (a starved data loader)
        straggler:RANK:SECONDS     rank RANK sleeps SECONDS in every forward/backward
        nan_loss:STEP              from step STEP on the loss is NaN
        slow_save:SECONDS          every checkpoint save first sleeps SECONDS (a slow file system:
                                   tests that a SIGTERM save gets the launcher's grace period)
    """

    def __init__(self, text: str | None, rank: int):
        self.slow_data = 0.0
        self.straggle = 0.0
        self.nan_from = None
        self.slow_save = 0.0
        for item in filter(None, (x.strip() for x in (text or "").split(","))):
            kind, _, rest = item.partition(":")
            try:
                if kind == "slow_data":
                    self.slow_data = float(rest)
                elif kind == "straggler":
                    r, s = rest.split(":")
                    self.straggle = float(s) if int(r) == rank else 0.0
                elif kind == "nan_loss":
                    self.nan_from = int(rest)
                elif kind == "slow_save":
                    self.slow_save = float(rest)
                else:
                    raise ValueError(kind)
            except ValueError:
                raise SystemExit(f"RECLAUNCH_FAULT: cannot parse {item!r}: expected slow_data:SECONDS, "
                                 "straggler:RANK:SECONDS, nan_loss:STEP or slow_save:SECONDS") from None
        self.active = bool(self.slow_data or self.straggle or self.nan_from is not None or self.slow_save)

    def describe(self) -> str:
        return (f"slow_data={self.slow_data} straggler_s={self.straggle} nan_from={self.nan_from} "
                f"slow_save={self.slow_save}")

    def loss_hook(self, step: int):
        if self.nan_from is None or step < self.nan_from:
            return None
        return lambda loss: loss * float("nan")
