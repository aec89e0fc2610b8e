"""The rules of `reclaunch diagnose`, one function each; thresholds come from the rule table
(diagnose_rules.yaml), never from here. Pure: a Measured (runtime.metrics), the plan's facts,
the projection and a rule's thresholds in; Findings out. runtime.diagnose applies them in order.

Each finding says what was measured, what to change in cluster.yaml or the job, and what the
plan expects that change to buy (samples/s, hours, dollars), so a user can act on it.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field
from statistics import median
from typing import Any

@dataclass(frozen=True)
class Finding:
    rule: str
    title: str
    severity: str                      # critical | warning | info
    what: str                          # what was measured
    fix: str                           # what to change in cluster.yaml or the job
    expected: str                      # what the plan expects the change to buy
    rank: int | None = None
    node: int | None = None
    numbers: dict[str, Any] = field(default_factory=dict)
    sources: tuple[str, ...] = ()
    as_of: str = ""


def gain(step_s: float | None, saved_s: float, samples_per_s: float | None) -> tuple[float, float | None]:
    """(speed-up factor, samples/s) if `saved_s` came off every step."""
    if not step_s or step_s <= 0 or saved_s <= 0:
        return 1.0, samples_per_s
    factor = step_s / max(step_s - saved_s, 1e-9)
    return factor, (samples_per_s * factor if samples_per_s else None)


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.1f} ms"


def _gib(b: float | None) -> str:
    return "-" if b is None else f"{b / 2**30:.2f} GiB"


def env_hint(key: str, value: Any) -> str:
    """How a job env setting reads in cluster.yaml."""
    return f"job.env: {{{key}: {shlex.quote(str(value))}}}"


def duration(hours: float) -> str:
    s = hours * 3600.0
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min" if s < 7200 else f"{hours:.1f} h"


def _money(f, proj, factor: float) -> str:
    """What a speed-up `factor` saves of the projected job, in time and dollars."""
    if proj is None or factor <= 1.0:
        return ""
    hours = proj.hours_total * (1 - 1 / factor)
    out = f"; the job ~{duration(hours)} shorter"
    if proj.usd_total:
        out += f" and ~${proj.usd_total * (1 - 1 / factor):,.0f} cheaper"
    return out


def _speed(m, f, proj, saved_s: float) -> tuple[float, str]:
    factor, sps = gain(m.step_s, saved_s, m.samples_per_s)
    if sps is None:
        return factor, f"~{factor:.2f}x the measured samples/s"
    plan = f" (the plan: {f.samples_per_s:,.0f})" if f else ""
    return factor, (f"samples/s {m.samples_per_s:,.0f} -> ~{sps:,.0f} ({factor:.2f}x){plan}"
                    + _money(f, proj, factor))


# ---- the rules --------------------------------------------------------------------------------

def data_loader_bound(m, f, proj, t, mk):
    if m.step_s is None or m.data_wait_s is None or m.step_s <= 0:
        return []
    share = m.data_wait_s / m.step_s
    if share < t["data_wait_share"] or m.data_wait_s < t["min_data_wait_s"]:
        return []
    now = f.num_workers if f else None
    want = min(t["max_workers"], max(t["min_workers"], (now or 0) * t["worker_factor"]))
    if now is not None and now >= want:   # more workers would only contend for the cores
        fix = (f"job.num_workers is {now} already: the input itself is slow; stage the dataset "
               "on faster storage (storage.kind: a local-NVMe or parallel file system) and write "
               "it in larger pre-shuffled shards")
    else:
        fix = (f"set job.num_workers: {want} in {f.source if f else 'cluster.yaml'}"
               + (f" (now {now})" if now is not None else "")
               + "; each worker prefetches batches ahead (DataLoader prefetch_factor), so input "
                 "overlaps compute; if the data is remote, stage it on the storage volume")
    _, expected = _speed(m, f, proj, m.data_wait_s)
    return [mk("warning", f"ranks wait {_ms(m.data_wait_s)} of a {_ms(m.step_s)} step for input "
                          f"({share:.0%}; threshold {t['data_wait_share']:.0%})", fix,
               "hiding the wait: " + expected,
               numbers={"data_wait_share": share, "suggested_num_workers": want})]


_PARTS = ("data_wait_s", "fwd_bwd_s", "optimizer_s")


def straggler(m, f, proj, t, mk):
    """A rank slower than the median of the others, overall (busy = step - comm) or in one
    part of the step (as NVRx scores each section): a time common to every rank, such as a
    slow loader everywhere, must not dilute one rank's slow compute."""
    ranks = [r for r in m.ranks if r.busy_s is not None]
    if len(ranks) < 2 or not m.step_s:
        return []
    one_host = bool(f and f.one_host)
    bar = t["relative_score_one_host"] if one_host else t["relative_score"]
    floor = max(t["min_excess_s"], t["min_excess_share"] * m.step_s)
    worst = None    # (excess, score, rank, part)
    for r in ranks:
        for part in ("busy_s", *_PARTS):
            mine = getattr(r, part)
            others = [getattr(o, part) for o in ranks if o.rank != r.rank and getattr(o, part) is not None]
            if mine is None or mine <= 0 or not others:
                continue
            ref = median(others)
            score, excess = ref / mine, mine - ref
            if score < bar and excess >= floor and (worst is None or excess > worst[0]):
                worst = (excess, score, r, part)
    if worst is None:
        return []
    excess, score, r, part = worst
    if part == "busy_s":   # name the part that holds most of the excess
        part = max(_PARTS, key=lambda k: (getattr(r, k) or 0.0) - median(
            [getattr(o, k) or 0.0 for o in ranks if o.rank != r.rank]))
    gpn = f.gpus_per_node if f else 1
    node = r.rank // max(1, gpn)
    where = {"data_wait_s": "its input pipeline (loader workers, its storage or network path)",
             "fwd_bwd_s": "its compute (a throttled or faulty GPU: nvidia-smi -q -d PERFORMANCE; "
                          "a noisy neighbour on the node)",
             "optimizer_s": "its optimizer step (CPU contention on the node)"}[part]
    _, expected = _speed(m, f, proj, excess)
    return [mk("warning",
               f"rank {r.rank} (node {node}) is {excess * 1e3:.1f} ms per step slower than the "
               f"median of the others (relative score {score:.2f} < {bar}); every other rank waits "
               f"for it in the collectives; the excess is in {where}",
               ("every node of this cluster shares this machine: stop what else loads its CPU, "
                "or run fewer processes (nodes x gpus_per_node in cluster.yaml)" if one_host else
                f"take node {node} out of the job: cordon it (kubectl cordon) and delete its pod so "
                "the job restarts on a fresh node from the pool (elastic jobs continue without it); "
                "nothing in cluster.yaml is wrong"),
               "without the straggler: " + expected, rank=r.rank, node=node,
               numbers={"relative_score": score, "excess_s": excess, "slow_part": part})]


def transport_fallback(m, f, proj, t, mk):
    if f is None or not f.transport or not m.transport or f.nodes < t["min_nodes"]:
        return []
    if m.transport == f.transport:
        return []
    why = "TCP sockets" if m.transport == "NET/Socket" else m.transport
    plugin = " (the NCCL net plugin was not found in the image)" if m.extra.get("plugin_missing") else ""
    saved = max(0.0, (m.comm_s or 0.0) - f.exposed_comm_s)
    _, speed = _speed(m, f, proj, saved) if saved > 0 else (1.0, "")
    return [mk("critical",
               f"NCCL used {m.transport}, not {f.transport}: inter-node traffic fell back from the "
               f"{f.fabric} fabric to {why}{plugin}",
               (f.fallback_fix or "set interconnect.inter_node to the instance's fabric")
               + "; check that nccl.env does not override NCCL_NET / NCCL_IB_* / FI_PROVIDER",
               (f"exposed communication back to the plan's {_ms(f.exposed_comm_s)} per step: {speed}"
                if speed else f"the plan's {_ms(f.allreduce_s)} all-reduce assumes {f.transport}; "
                "sockets are typically 10-100x slower on these fabrics (reference/fabrics.md)"),
               numbers={"expected_transport": f.transport, "transport": m.transport})]


def missing_gpudirect(m, f, proj, t, mk):
    if f is None or not f.gpudirect or f.nodes < t["min_nodes"] or m.gdr is not False \
            or m.transport != f.transport:
        return []
    return [mk("warning",
               f"NCCL runs over {m.transport} without GPUDirect RDMA (no /GDRDMA on its channels): "
               "every transfer is staged through host memory",
               "keep the fabric profile's GPUDirect settings (do not lower NCCL_NET_GDR_LEVEL in "
               "nccl.env; on EFA aws-ofi-nccl >= 1.7 and libfabric >= 1.18, or "
               "FI_EFA_USE_DEVICE_RDMA=1 with an older plugin) and check the nodes load the GPU "
               "peer-memory / dma-buf support their GPU driver needs",
               f"the plan's {_ms(f.allreduce_s)} all-reduce assumes GPUDirect RDMA on {f.fabric}",
               numbers={"gdr": False})]


def comm_bound(m, f, proj, t, mk):
    if f is None or m.comm_s is None or m.step_s is None or m.step_s <= 0:
        return []
    plan = max(f.exposed_comm_s, 1e-6)
    compute = f.embedding_s + f.dense_s
    # the plan's embedding compute includes the table update; a dense-kernel (CPU) run does that
    # update in the optimizer step, so measured compute is fwd+bwd plus the optimizer part
    busy = (m.fwd_bwd_s or 0.0) + (m.optimizer_s or 0.0)
    slower = busy / compute if busy > 0 and compute > 0 else 1.0
    over_compute = t["factor_over_compute_one_host" if f.one_host else "factor_over_compute"]
    if m.comm_s < t["factor_over_plan"] * plan or m.comm_s / m.step_s < t["min_comm_share"] \
            or m.comm_s < t["min_comm_s"] \
            or m.comm_s / plan < over_compute * max(1.0, slower):
        return []
    if m.transport and f.transport and m.transport != f.transport:
        cause, fix = (f"NCCL fell back to {m.transport}",
                      f.fallback_fix or "set interconnect.inter_node to the instance's fabric")
    elif m.gdr is False and f.gpudirect:
        cause, fix = ("no GPUDirect RDMA", "restore the fabric profile's GPUDirect settings "
                      "(NCCL_NET_GDR_LEVEL) in nccl.env; on EFA aws-ofi-nccl >= 1.7")
    else:
        cause = (f"the {f.fabric} profile's bandwidth is not what the cluster delivers "
                 "(wrong fabric profile, a degraded link, or a plan that shards too little)")
        fix = ("run `reclaunch up --preflight` to measure all-reduce bus bandwidth against the "
               "profile's threshold; " + (f.low_busbw_fix or "check NCCL_SOCKET_IFNAME")
               + ("; model.sharding: table_wise moves embedding traffic from all-reduce to "
                  "all-to-all" if f.parallelism == "data" and f.allreduce_s > f.alltoall_s else ""))
    _, expected = _speed(m, f, proj, m.comm_s - f.exposed_comm_s)
    return [mk("warning",
               f"exposed communication {_ms(m.comm_s)} per step is {m.comm_s / plan:.1f}x the "
               f"plan's {_ms(f.exposed_comm_s)} ({m.comm_s / m.step_s:.0%} of the step): {cause}",
               fix, "communication as planned: " + expected,
               numbers={"comm_over_plan": m.comm_s / plan, "compute_over_plan": slower})]


def memory_headroom(m, f, proj, t, mk):
    if f is None or m.peak_mem_bytes is None:
        return []
    out = []
    cap = f.mem_capacity_bytes
    share = m.peak_mem_bytes / cap if cap else 0.0
    if cap and share > t["max_share_of_capacity"]:
        fixed = max(0, f.mem_bytes - f.activation_bytes)    # weights, grads, optimizer state
        act = max(1, m.peak_mem_bytes - fixed)
        room = t["max_share_of_capacity"] * cap - fixed
        batch = max(1, 2 ** int(math.log2(max(1.0, f.batch_size * room / act)))) if room > 0 else 1
        out.append(mk("critical",
                      f"peak memory {_gib(m.peak_mem_bytes)} is {share:.0%} of the "
                      f"{_gib(cap)} per GPU ({m.mem_kind or '?'}); threshold "
                      f"{t['max_share_of_capacity']:.0%}: one larger batch or a fragmented "
                      "allocator away from out-of-memory",
                      f"lower job.batch_size from {f.batch_size} to {batch}, or spread the "
                      "embeddings wider (model.sharding: row_wise / table_wise, more GPUs), or "
                      "precision: bf16",
                      f"peak back under {t['max_share_of_capacity']:.0%} of capacity; the plan "
                      f"put this job at {_gib(f.mem_bytes)} per GPU",
                      numbers={"share_of_capacity": share, "suggested_batch_size": batch}))
    if m.mem_kind == "cuda" and m.peak_mem_bytes > t["over_plan_factor"] * f.mem_bytes \
            and m.peak_mem_bytes - f.mem_bytes > t["min_over_plan_bytes"]:
        out.append(mk("warning",
                      f"peak memory {_gib(m.peak_mem_bytes)} is {m.peak_mem_bytes / f.mem_bytes:.1f}x "
                      f"the plan's {_gib(f.mem_bytes)} per GPU: the plan's fit margin does not hold",
                      "check what else the trainer keeps on the GPU (torch.cuda.memory_summary()); "
                      "budget the difference before raising job.batch_size",
                      "no speed-up: this keeps the plan's memory check honest",
                      numbers={"over_plan": m.peak_mem_bytes / f.mem_bytes}))
    return out


def memory_growth(m, f, proj, t, mk):
    s = list(m.mem_series)
    if len(s) < t["min_intervals"]:
        return []
    base, last = s[1], s[-1]
    grew = last - base
    if base <= 0 or grew < t["min_growth_bytes"] or grew / base < t["growth_share"]:
        return []
    return [mk("warning",
               f"peak memory grew from {_gib(base)} to {_gib(last)} (+{grew / base:.0%}) after "
               "warm-up and is still growing: tensors kept alive between steps (a loss or "
               "metric accumulated with its graph, a growing cache)",
               "find what holds them (torch.cuda.memory_summary(), memory_profiler); accumulate "
               "loss.item(), not loss; the job itself needs no change",
               "memory flat after warm-up: no out-of-memory later in the run",
               numbers={"growth_share": grew / base})]


def _nan_fix(f, t) -> str:
    lr = f"{f.lr * t['lr_factor']:g}" if f and f.lr else None
    fix = ("lower the learning rate: " + (env_hint("RECLAUNCH_LR", lr) if lr else
           f"{t['lr_factor']:g}x the current one (job.env RECLAUNCH_LR, the trainer's --lr)")
           + "; clip gradients (torch.nn.utils.clip_grad_norm_, max_norm 1.0)")
    if f and f.precision == "fp16":
        fix += "; precision: bf16 (fp16 overflows without a GradScaler)"
    return fix + "; resume from a checkpoint written before the first bad step"


def loss_nan(m, f, proj, t, mk):
    bad = [s for s, _, _, nan in m.losses if nan]
    if not bad:
        return []
    left = (f"; at the measured rate the remaining {duration(proj.hours_left)}"
            + (f" (~${proj.usd_total * proj.hours_left / proj.hours_total:,.0f})"
               if proj.usd_total and proj.hours_total else "") + " would train a NaN model"
            if proj else "")
    return [mk("critical", f"loss is NaN from step {min(bad)} on: the model stopped learning",
               _nan_fix(f, t), "every step after the first NaN is wasted" + left,
               numbers={"first_nan_step": min(bad)})]


def loss_exploding(m, f, proj, t, mk):
    pts = [(s, loss, g) for s, loss, g, nan in m.losses if not nan]
    if len(pts) < t["min_intervals"] or any(nan for *_, nan in m.losses):
        return []
    losses = [loss for _, loss, _ in pts if loss is not None]
    grads = [g for *_, g in pts if g is not None]
    why = None
    low = min(losses[:-2]) if len(losses) >= 4 else None
    if low is not None and low > 0 and min(losses[-2:]) > t["loss_rise_factor"] * low:
        # the newest two intervals both: one noisy interval is not a divergence
        why = f"loss rose to {losses[-1]:.4g} from a low of {low:.4g}"
    elif len(grads) >= 4:
        early = median(grads[: len(grads) // 2])
        if early > 0 and grads[-1] > t["grad_norm_factor"] * early:
            why = f"gradient norm {grads[-1]:.4g} is {grads[-1] / early:.0f}x its early {early:.4g}"
    if why is None:
        return []
    return [mk("warning", why + ": training is diverging", _nan_fix(f, t),
               "a converging run: steps spent diverging are wasted")]


def throughput_drift(m, f, proj, t, mk):
    s = [x for _, _, x in m.series][1:]     # the first interval is warm-up
    if len(s) < t["min_intervals"]:
        return []
    q = max(1, len(s) // 4)
    early, late = sum(s[:q]) / q, sum(s[-q:]) / q
    if early <= 0 or 1 - late / early < t["drop_share"]:
        return []
    factor = early / max(late, 1e-9)
    return [mk("warning",
               f"samples/s fell from {early:,.0f} to {late:,.0f} ({1 - late / early:.0%}) over the run",
               "look for what changes with time: memory growth, thermal throttling "
               "(nvidia-smi -q -d PERFORMANCE), a data source slowing down, restarts after "
               "reclaims (reclaunch status); nothing in cluster.yaml causes this by itself",
               f"back to {early:,.0f} samples/s" + _money(f, proj, factor),
               numbers={"early": early, "late": late})]


def interrupted(m, f, proj, t, mk):
    """The job was stopped and resumed (a reclaim, a drill, `down`): say so, since its time
    is in the job's duration but not in any interval's samples/s."""
    stops = (m.extra or {}).get("interruptions")
    if not stops:
        return []
    n = max(int(stops.get("restarts") or 0), 1 if stops.get("sigterm_steps") else 0)
    if n < int(t.get("min_interruptions", 1)):
        return []
    sig = stops.get("sigterm_steps") or []
    back = stops.get("resumed_from") or []
    what = (f"the job was interrupted {n} time(s)"
            + (f": SIGTERM at step {', '.join(map(str, sig[:5]))}" if sig else "")
            + (f"; resumed from step {', '.join(map(str, back[:5]))}" if back else "")
            + "; the wait for the restart and the steps since the last checkpoint are in the "
              "job's time, not in the samples/s above")
    return [mk("info", what,
               "nothing, if it was a reclaim or a drill (spot: the plan prices "
               "spot.restart_minutes per reclaim); otherwise `reclaunch status NAME` and "
               "`reclaunch logs NAME --all` show why the nodes stopped",
               "each interruption costs the restart plus up to job.checkpoint.every_minutes "
               "of steps trained again",
               numbers={"restarts": n, "sigterm_steps": sig[:20], "resumed_from": back[:20]})]


def below_plan(m, f, proj, t, mk):
    if f is None or not m.samples_per_s or f.samples_per_s <= 0:
        return []
    ratio = m.samples_per_s / f.samples_per_s
    if ratio >= t["min_ratio"]:
        return []
    if m.mem_kind == "rss":   # cloud: local: the same processes on a shared machine
        return [mk("info",
                   f"{m.samples_per_s:,.0f} samples/s is {ratio:.0%} of the plan's "
                   f"{f.samples_per_s:,.0f} on this machine",
                   "a local plan predicts from `reclaunch calibrate` (without it, from "
                   "laptop-class constants, which the plan says): calibrate on an idle machine "
                   "and re-plan; other work on these cores, or a reclaim drill, slows a run too",
                   f"the plan's rate would make the job {1 / ratio:.1f}x shorter",
                   numbers={"ratio": ratio})]
    return [mk("info",
               f"{m.samples_per_s:,.0f} samples/s is {ratio:.0%} of the plan's "
               f"{f.samples_per_s:,.0f}, and no rule names a cause",
               "profile one rank (torch.profiler, nsys profile) and measure the fabric "
               "(`reclaunch up --preflight`: all_reduce_perf); if the plan is wrong for this "
               "hardware, its constants live in reclaunch/planner/data/planner.yaml",
               f"the plan's rate would make the job {1 / ratio:.1f}x shorter"
               + _money(f, proj, 1 / ratio), numbers={"ratio": ratio})]
