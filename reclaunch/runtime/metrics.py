"""The trainer's RECLAUNCH_METRICS lines (defined in examples/trainer/README.md, "Output") -> per-rank summaries.

Pure: log lines in, values out. Whoever reads the logs (a provider: local files, the Kubernetes
logs API) passes the lines here. NCCL's own INFO lines in the same logs name the transport
when the trainer could not (`nccl_transport: null`); their parser is the preflight's.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field, replace
from statistics import median
from typing import Any, Iterable

MARK = "RECLAUNCH_METRICS "
_TIMES = ("step_s", "data_wait_s", "fwd_bwd_s", "optimizer_s", "comm_s")
_NUMS = ("time", "samples_per_s", "global_samples_per_s", *_TIMES, "loss", "grad_norm")
_TORCHRUN_RANK = re.compile(r"^\[(?:rank|default)(\d+)\]:")


@dataclass(frozen=True)
class Sample:
    """One RECLAUNCH_METRICS line: per-step means over one logging interval of one rank."""

    rank: int
    step: int
    world_size: int | None = None
    time: float | None = None
    interval_steps: int | None = None
    samples_per_s: float | None = None
    global_samples_per_s: float | None = None
    step_s: float | None = None
    data_wait_s: float | None = None
    fwd_bwd_s: float | None = None
    optimizer_s: float | None = None
    comm_s: float | None = None
    peak_mem_bytes: int | None = None
    mem_kind: str | None = None
    loss: float | None = None
    loss_nan: bool = False
    grad_norm: float | None = None
    nccl_transport: str | None = None
    gdr: bool | None = None
    final: bool = False


# What a metrics line may hold. A value outside its range is garbage (a bug, or a hostile
# job), not a measurement: the line is rejected and counted as malformed. The bounds are
# wide: a year of steps at 10k steps/s, a million ranks, a petabyte of device memory.
MAX_LINE = 64 * 1024
MAX_RANKS = 1_000_000
MAX_STEP = 10**15
_RANGES: dict[str, tuple[float, float]] = {
    "time": (0.0, 1e11),                       # unix seconds (year ~5000)
    "samples_per_s": (0.0, 1e12), "global_samples_per_s": (0.0, 1e12),
    **{k: (0.0, 1e6) for k in _TIMES},         # seconds per step
    "loss": (-1e30, 1e30), "grad_norm": (0.0, 1e30),
}
_INTS: dict[str, tuple[int, int]] = {"world_size": (1, MAX_RANKS), "interval_steps": (1, 10**9),
                                     "peak_mem_bytes": (0, 2**60)}
_STRS = ("mem_kind", "nccl_transport")


class _Garbage(ValueError):
    """A value out of its range: the whole line is rejected."""


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        return float(v)
    except OverflowError:   # an int beyond any float (10**400): garbage, not infinity
        raise _Garbage("number") from None


def _ranged(key: str, v: Any) -> float | None:
    x = _num(v)
    if x is None or not math.isfinite(x):
        return x
    lo, hi = _RANGES[key]
    if not lo <= x <= hi:
        raise _Garbage(key)
    return x


def _int(key: str, v: Any) -> int | None:
    if v is None:
        return None
    lo, hi = _INTS[key]
    if isinstance(v, float) and v.is_integer() and key == "peak_mem_bytes" and lo <= v <= hi:
        return int(v)   # a writer's float bytes (2.0e9): still bytes
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise _Garbage(key)
    return v


def parse_line(line: str) -> Sample | None:
    """One log line -> a Sample, or None when it is not a (valid) metrics line.

    Tolerant of what sits before the marker (torchrun's `[rank3]:`, kubectl timestamps) and of
    a NaN token some JSON writers emit although the contract forbids it (then loss_nan).
    Never raises: a line over MAX_LINE, JSON nested too deep, or a value out of its range
    (`rank` 10**300, -1e9 samples/s) is not a sample (parse_lines counts it malformed)."""
    if not isinstance(line, str) or len(line) > MAX_LINE:
        return None
    at = line.find(MARK)
    if at < 0:
        return None
    try:
        d = json.loads(line[at + len(MARK):].strip())
        return _sample(d) if isinstance(d, dict) else None
    except (ValueError, RecursionError, OverflowError, TypeError):   # _Garbage is a ValueError
        return None


def _sample(d: dict[str, Any]) -> Sample | None:
    if d.get("v") != 1:
        return None
    rank, step = d.get("rank"), d.get("step")
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < MAX_RANKS \
            or isinstance(step, bool) or not isinstance(step, int) or not 0 <= step <= MAX_STEP:
        return None
    nums = {k: _ranged(k, d.get(k)) for k in _NUMS}
    loss_nan = bool(d.get("loss_nan")) or (nums["loss"] is not None and not math.isfinite(nums["loss"]))
    for k, v in nums.items():   # inf/NaN timings are garbage, not data
        if v is not None and not math.isfinite(v):
            nums[k] = None
    if loss_nan:
        nums["loss"] = None
    ints = {k: _int(k, d.get(k)) for k in _INTS}
    text = {k: d[k][:64] if isinstance(d.get(k), str) else None for k in _STRS}
    gdr = d.get("gdr")
    return Sample(rank=rank, step=step, **ints, **text, loss_nan=loss_nan,
                  gdr=gdr if isinstance(gdr, bool) else None, final=d.get("final") is True, **nums)


def log_rank(line: str) -> int | None:
    """The rank a torchrun-prefixed line came from (`[rank3]: ...`), else None."""
    m = _TORCHRUN_RANK.match(line)
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class RankSummary:
    """One rank over the analysis window (the last few intervals, warm-up dropped)."""

    rank: int
    intervals: int                      # metrics lines seen in all
    last_step: int
    step_s: float | None
    data_wait_s: float | None
    fwd_bwd_s: float | None
    optimizer_s: float | None
    comm_s: float | None
    samples_per_s: float | None
    peak_mem_bytes: int | None
    mem_kind: str | None
    first_nan_step: int | None          # the first interval that reported a NaN loss
    transport: str | None
    gdr: bool | None
    final: bool

    @property
    def busy_s(self) -> float | None:
        """Time the rank spends on its own work (not waiting in collectives): a slow rank
        shows it here, while every rank's step_s is the same in synchronous training."""
        if self.step_s is None:
            return None
        return max(0.0, self.step_s - (self.comm_s or 0.0))


@dataclass(frozen=True)
class Measured:
    """The whole job as measured: what diagnose compares with the plan."""

    ranks: tuple[RankSummary, ...]
    world_size: int
    step: int                           # furthest optimizer step any rank reported
    samples_per_s: float | None         # the cluster's (rank 0's global figure, or the sum)
    step_s: float | None                # median over ranks of each part
    data_wait_s: float | None
    fwd_bwd_s: float | None
    optimizer_s: float | None
    comm_s: float | None
    peak_mem_bytes: int | None          # the largest over ranks
    mem_kind: str | None
    transport: str | None
    gdr: bool | None
    first_time: float | None
    last_time: float | None
    finished: bool                      # a final line was seen
    series: tuple[tuple[float | None, int, float], ...] = ()   # (time, step, samples/s) rank 0
    mem_series: tuple[int, ...] = ()    # peak memory per interval, the largest rank's
    losses: tuple[tuple[int, float | None, float | None, bool], ...] = ()   # (step, loss, grad, nan)
    malformed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def _med(xs: Iterable[float | None]) -> float | None:
    vals = [x for x in xs if x is not None]
    return median(vals) if vals else None


def window(samples: list[Sample], size: int) -> list[Sample]:
    """The last `size` non-final intervals, dropping the first (warm-up: compilation, cold
    caches, the rendezvous) when there are enough to spare it."""
    body = [s for s in samples if not s.final] or samples
    if len(body) >= 3:
        body = body[1:]
    return body[-size:] if size > 0 else body


def summarize_rank(rank: int, samples: list[Sample], size: int) -> RankSummary:
    w = window(samples, size)
    nan = next((s.step for s in samples if s.loss_nan), None)
    mems = [s.peak_mem_bytes for s in samples if s.peak_mem_bytes is not None]
    kinds = [s.mem_kind for s in samples if s.mem_kind]
    trans = [s.nccl_transport for s in samples if s.nccl_transport]
    gdrs = [s.gdr for s in samples if s.gdr is not None]
    return RankSummary(
        rank=rank, intervals=len(samples), last_step=max(s.step for s in samples),
        **{k: _med(getattr(s, k) for s in w) for k in _TIMES},
        samples_per_s=_med(s.samples_per_s for s in w),
        peak_mem_bytes=max(mems) if mems else None, mem_kind=kinds[-1] if kinds else None,
        first_nan_step=nan, transport=trans[-1] if trans else None,
        gdr=gdrs[-1] if gdrs else None, final=any(s.final for s in samples))


def aggregate(samples: Iterable[Sample], *, window_size: int = 5, malformed: int = 0) -> Measured | None:
    """Samples of every rank -> the job's Measured, or None when there are none."""
    by_rank: dict[int, list[Sample]] = {}
    for s in samples:
        by_rank.setdefault(s.rank, []).append(s)
    if not by_rank:
        return None
    for lst in by_rank.values():   # log order is time order per rank; time breaks no ties
        lst.sort(key=lambda s: (s.time is None, s.time or 0.0))
    ranks = tuple(summarize_rank(r, by_rank[r], window_size) for r in sorted(by_rank))
    everyone = [s for lst in by_rank.values() for s in lst]
    world = max([s.world_size or 0 for s in everyone] + [max(by_rank) + 1])
    lead = by_rank.get(0) or by_rank[min(by_rank)]
    glob = _med(s.global_samples_per_s for s in window(lead, window_size))
    if glob is None:  # rank 0 missing or silent on the global figure: sum what ranks say
        per = [r.samples_per_s for r in ranks]
        glob = sum(per) * world / len(per) if all(p is not None for p in per) else None
    series = tuple((s.time, s.step, s.global_samples_per_s if s.global_samples_per_s is not None
                    else (s.samples_per_s or 0.0) * world) for s in lead if not s.final
                   and (s.global_samples_per_s is not None or s.samples_per_s is not None))
    mem_series: list[int] = []
    per_rank_mem = [[s.peak_mem_bytes for s in by_rank[r] if not s.final] for r in sorted(by_rank)]
    for i in range(max(len(m) for m in per_rank_mem)):
        vals = [m[i] for m in per_rank_mem if i < len(m) and m[i] is not None]
        if vals:
            mem_series.append(max(vals))
    losses = tuple((s.step, s.loss, s.grad_norm, s.loss_nan) for s in lead)
    nan_ranks = [(r.first_nan_step, r.rank) for r in ranks if r.first_nan_step is not None]
    if nan_ranks and not any(n for *_, n in losses):   # NaN seen on another rank only
        losses += ((min(nan_ranks)[0], None, None, True),)
    trans = [r.transport for r in ranks if r.transport]
    gdrs = [r.gdr for r in ranks if r.gdr is not None]
    mems = [r.peak_mem_bytes for r in ranks if r.peak_mem_bytes is not None]
    times = [s.time for s in everyone if s.time is not None]
    return Measured(
        ranks=ranks, world_size=world, step=max(r.last_step for r in ranks),
        samples_per_s=glob, **{k: _med(getattr(r, k) for r in ranks) for k in _TIMES},
        peak_mem_bytes=max(mems) if mems else None,
        mem_kind=next((r.mem_kind for r in ranks if r.mem_kind), None),
        transport=max(set(trans), key=trans.count) if trans else None,
        gdr=all(gdrs) if gdrs else None, first_time=min(times) if times else None,
        last_time=max(times) if times else None, finished=any(r.final for r in ranks),
        series=series, mem_series=tuple(mem_series), losses=losses, malformed=malformed)


# The trainer's own lines when a run is interrupted (examples/trainer/train.py): SIGTERM (a
# reclaim notice, `down`, a drill) and the resume from a checkpoint after a restart.
_SIGTERM = re.compile(r"(?:^|\]: ?)info sigterm step=(\d{1,15})(?!\d)")
_RESUMED = re.compile(r"(?:^|\]: ?)info resumed_from_step=(\d{1,15})(?!\d)")


def parse_lines(lines: Iterable[str], events: dict[str, list] | None = None
                ) -> tuple[list[Sample], list[str], int]:
    """-> (metrics samples, the NCCL lines among the rest, malformed metrics lines).
    `events`, when given, collects the interruptions: {"sigterm"|"resumed": [(rank, step)]}."""
    samples: list[Sample] = []
    nccl: list[str] = []
    bad = 0
    for line in lines:
        if MARK in line:
            s = parse_line(line)
            if s is None:
                bad += 1
            else:
                samples.append(s)
        elif "NCCL" in line or "NET/" in line:
            nccl.append(line)
        elif events is not None and "info " in line and len(line) <= MAX_LINE:
            for kind, rx in (("sigterm", _SIGTERM), ("resumed", _RESUMED)):
                if m := rx.search(line):
                    events.setdefault(kind, []).append((log_rank(line), int(m.group(1))))
    return samples, nccl, bad


def interruptions(events: dict[str, list]) -> dict[str, Any] | None:
    """How often the job was stopped and resumed, from the trainer's lines: every rank of a
    restart prints the same resume, so the count is the most any one rank printed."""
    resumed: dict[Any, list[int]] = {}
    for rank, step in events.get("resumed", []):
        resumed.setdefault(rank, []).append(step)
    sigterms = sorted({step for _, step in events.get("sigterm", [])})
    if not resumed and not sigterms:
        return None
    lead = max(resumed.values(), key=len) if resumed else []
    return {"restarts": len(lead), "resumed_from": lead, "sigterm_steps": sigterms}


def nccl_facts(nccl_lines: list[str]) -> tuple[str | None, bool | None, dict[str, Any]]:
    """(transport, GPUDirect RDMA in use, details) from NCCL_DEBUG=INFO lines.

    Transport: the preflight's parser (channel `via NET/X` lines first, then `Using network`,
    then the init lines). GDR: NCCL appends `/GDRDMA` to a channel's transport when GPUDirect
    RDMA carries it (NCCL transport/net.cc prints `via NET/%s/%d%s%s` with "/GDRDMA")."""
    if not nccl_lines:
        return None, None, {}
    from reclaunch.manifests.preflight import parse_nccl_debug
    dbg = parse_nccl_debug("\n".join(nccl_lines))
    via = [ln for ln in nccl_lines if re.search(r"via NET/", ln)]
    gdr = (any("/GDRDMA" in ln for ln in via) if via else None)
    return dbg.primary, gdr, {"transports": list(dbg.transports),
                              "plugin_missing": dbg.plugin_missing,
                              "ofi_provider": dbg.ofi_provider, "nccl_version": dbg.version}


def with_nccl(m: Measured, nccl_lines: list[str]) -> Measured:
    """Fill the transport (and GDR) from NCCL's own INFO lines where the trainer left them
    null; the trainer's figure wins when it has one (it saw its own communicator)."""
    transport, gdr, details = nccl_facts(nccl_lines)
    if transport is None and gdr is None:
        return m
    return replace(m, transport=m.transport or transport, gdr=m.gdr if m.gdr is not None else gdr,
                   extra={**m.extra, **details, "nccl_transport_from_logs": transport})


def measure(lines: Iterable[str], *, window_size: int = 5) -> Measured | None:
    """Log lines (every rank's, any order between ranks) -> Measured, or None if no metrics."""
    events: dict[str, list] = {}
    samples, nccl, bad = parse_lines(lines, events)
    m = aggregate(samples, window_size=window_size, malformed=bad)
    if m is None:
        return None
    if (stops := interruptions(events)) is not None:
        m = replace(m, extra={**m.extra, "interruptions": stops})
    return with_nccl(m, nccl)
