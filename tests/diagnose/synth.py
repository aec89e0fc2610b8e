"""RECLAUNCH_METRICS lines as the trainer prints them (defined in examples/trainer/README.md, "Output"), for tests.

`run()` makes a job's lines: every rank, every interval, deterministic jitter. The defaults
describe a healthy run of examples/aws-deepfm-p4d.yaml (4 x p4d, 32 ranks) as its current plan
predicts it (step split and memory read from `make_plan`, so a planner change cannot turn the
healthy fixture into a fault), loss going down. Faults are planted by the keyword arguments,
the way the trainer's RECLAUNCH_FAULT plants them.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@functools.lru_cache(maxsize=None)
def planned(example: str) -> dict:
    """The example's planned step split (seconds) and memory per GPU (bytes)."""
    from reclaunch.planner import make_plan
    from reclaunch.spec import load_spec

    plan = make_plan(load_spec(ROOT / "examples" / example))
    st, mem = plan.step, plan.memory
    # The exposed communication as planned; the rest of the step is compute as the trainer's
    # clock sees it (a host-bound step's waiting for the CPU shows in its forward/backward).
    comm = min(st.exposed_comm_seconds, 0.9 * st.total_seconds)
    busy = (st.total_seconds * 0.98 - comm) / 1.05
    return {"step_s": st.total_seconds, "data_wait_s": 0.02 * st.total_seconds,
            "fwd_bwd_s": busy, "optimizer_s": 0.05 * busy, "comm_s": comm,
            "mem": int(0.9 * (mem.total_bytes_per_gpu - mem.reserve_bytes))}


def line(d: dict, prefix: str = "") -> str:
    return prefix + "RECLAUNCH_METRICS " + json.dumps(d, separators=(",", ":"))


def run(*, world: int = 32, intervals: int = 8, every: int = 20, batch: int = 4096,
        step_s: float | None = None, data_wait_s: float | None = None,
        fwd_bwd_s: float | None = None, optimizer_s: float | None = None,
        comm_s: float | None = None, mem: int | None = None,
        mem_kind: str = "cuda", transport: str | None = "NET/OFI", gdr: bool | None = True,
        slow_data_s: float = 0.0, straggler: tuple[int, float] | None = None,
        nan_from_step: int | None = None, mem_growth_per_interval: int = 0,
        slowdown_per_interval: float = 0.0, final: bool = False, t0: float = 1764480000.0,
        prefix: str = "", loss0: float = 0.70, example: str = "aws-deepfm-p4d.yaml") -> list[str]:
    p = planned(example)
    step_s = p["step_s"] if step_s is None else step_s
    data_wait_s = p["data_wait_s"] if data_wait_s is None else data_wait_s
    fwd_bwd_s = p["fwd_bwd_s"] if fwd_bwd_s is None else fwd_bwd_s
    optimizer_s = p["optimizer_s"] if optimizer_s is None else optimizer_s
    comm_s = p["comm_s"] if comm_s is None else comm_s
    mem = p["mem"] if mem is None else mem
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
    torchrun's `[rankN]: ` prefix, CPU RSS, no NCCL, the step the local plan predicts."""
    args = dict(world=2, batch=256, mem_kind="rss", transport=None, gdr=None, every=50,
                intervals=6, prefix="[rank{rank}]: ", example="local-deepfm.yaml")
    args.update(kw)
    return run(**args)
