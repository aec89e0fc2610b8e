"""RECLAUNCH_METRICS lines as the trainer prints them (CONTRACTS.md, contract 2), for tests.

`run()` makes a job's lines: every rank, every interval, deterministic jitter. The defaults
describe a healthy run of examples/aws-deepfm-p4d.yaml (4 x p4d, 32 ranks) close to its plan:
~60 ms steps that are mostly exposed all-reduce, 7 GiB of 40 GiB HBM, loss going down.
Faults are planted by the keyword arguments, the way the trainer's RECLAUNCH_FAULT plants them.
"""

from __future__ import annotations

import json
import math


def line(d: dict, prefix: str = "") -> str:
    return prefix + "RECLAUNCH_METRICS " + json.dumps(d, separators=(",", ":"))


def run(*, world: int = 32, intervals: int = 8, every: int = 20, batch: int = 4096,
        step_s: float = 0.0610, data_wait_s: float = 0.0008, fwd_bwd_s: float = 0.0011,
        optimizer_s: float = 0.0003, comm_s: float = 0.0588, mem: int = 7 << 30,
        mem_kind: str = "cuda", transport: str | None = "NET/OFI", gdr: bool | None = True,
        slow_data_s: float = 0.0, straggler: tuple[int, float] | None = None,
        nan_from_step: int | None = None, mem_growth_per_interval: int = 0,
        slowdown_per_interval: float = 0.0, final: bool = False, t0: float = 1764480000.0,
        prefix: str = "", loss0: float = 0.70) -> list[str]:
    out = []
    t = t0
    for i in range(intervals):
        step = (i + 1) * every
        wait = data_wait_s + slow_data_s
        base_busy = data_wait_s + fwd_bwd_s + optimizer_s
        extra = straggler[1] if straggler else 0.0
        slow = 1.0 + slowdown_per_interval * i
        step_time = (max(step_s, base_busy + comm_s) + extra + slow_data_s) * slow
        t += every * step_time
        for r in range(world):
            jitter = 1.0 + 0.02 * math.sin(1.7 * r + 0.9 * i)      # +-2 %, no RNG
            busy_extra = extra if straggler and r == straggler[0] else 0.0
            st = step_time * jitter
            fb = (fwd_bwd_s + busy_extra) * jitter
            comm = max(0.0, st - wait * jitter - fb - optimizer_s * jitter)
            loss = loss0 * (0.93 ** i) + 0.01 * math.sin(r + i)
            nan = nan_from_step is not None and step >= nan_from_step
            d = {"v": 1, "rank": r, "world_size": world, "step": step, "time": round(t, 3),
                 "interval_steps": every, "samples_per_s": round(batch / st, 1),
                 "global_samples_per_s": round(batch * world / step_time, 1) if r == 0 else None,
                 "step_s": round(st, 6), "data_wait_s": round(wait * jitter, 6),
                 "fwd_bwd_s": round(fb, 6), "optimizer_s": round(optimizer_s * jitter, 6),
                 "comm_s": round(comm, 6),
                 "peak_mem_bytes": mem + i * mem_growth_per_interval + r * 1024,
                 "mem_kind": mem_kind, "loss": None if nan else round(loss, 5),
                 "grad_norm": None if nan else round(1.2 + 0.1 * math.cos(r + i), 4),
                 "nccl_transport": transport, "gdr": gdr}
            if nan:
                d["loss_nan"] = True
            out.append(line(d, prefix.format(rank=r)))
    if final:
        for r in range(world):
            out.append(line({"v": 1, "rank": r, "world_size": world, "step": intervals * every,
                             "time": round(t + 1, 3), "final": True,
                             "samples_per_s": round(batch / step_s, 1)}, prefix.format(rank=r)))
    return out


def local(**kw) -> list[str]:
    """A healthy examples/local-deepfm.yaml run as cloud: local logs it: 2 ranks on gloo,
    torchrun's `[rankN]: ` prefix, CPU RSS, no NCCL (the local plan: ~22 ms steps)."""
    args = dict(world=2, batch=256, step_s=0.024, data_wait_s=0.0006, fwd_bwd_s=0.0040,
                optimizer_s=0.0010, comm_s=0.0180, mem=420 << 20, mem_kind="rss",
                transport=None, gdr=None, every=50, intervals=6, prefix="[rank{rank}]: ")
    args.update(kw)
    return run(**args)
