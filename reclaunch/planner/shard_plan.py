"""Spec + hardware -> the Sharding a plan carries (tables, per-rank loads, why).

sharding.py searches; this module builds its inputs from the Spec, turns the winning
evaluation into model.Sharding (the contract the trainer executes) and writes the lines
that say what the choice stands on.
"""

from __future__ import annotations

from reclaunch.errors import SpecError
from reclaunch.planner.constants import constants, dtype_bytes
from reclaunch.planner.memory import GIB, Fixed, table_bytes
from reclaunch.planner.model import RankLoad, Sharding, TableShard
from reclaunch.planner.perf import Hardware, collective_latency_seconds, embedding_inter_gbs, host_work
from reclaunch.planner.shard_cost import Ctx, options
from reclaunch.planner.shard_search import search
from reclaunch.planner.sharding import Eval, StepCtx, TableIn, evaluate
from reclaunch.spec.stacks import assumed
from reclaunch.spec.sharders import (EC, MODULE_SHARDING, PIN, TORCHREC_VERSION, is_sequence,
                                     kernel_for, pin_problems)

SHORT = {"data_parallel": "DP", "table_wise": "TW", "row_wise": "RW", "column_wise": "CW",
         "table_row_wise": "TWRW"}


def _ctx(spec, hw: Hardware, budget: float, nodes: int, gpn: int) -> Ctx:
    c = constants()
    m, job = spec.model, spec.job
    mult = c["memory"]["optimizer_state_multiplier"][job.optimizer]
    return Ctx(world=nodes * gpn, gpus_per_node=gpn, batch=job.batch_size,
               emb_bytes=dtype_bytes(m.embedding_dtype), out_bytes=dtype_bytes(job.precision),
               grad_bytes=dtype_bytes(job.gradient_dtype),
               opt_mult=0.0 if mult == "per_row" else float(mult), rowwise_opt=mult == "per_row",
               hbm_gbs=hw.hbm_gbs, stream_gbs=hw.stream, intra_gbs=hw.intra_gbs,
               inter_gbs=embedding_inter_gbs(hw), a2a_eff_intra=c["perf"]["alltoall_efficiency_intra"],
               a2a_eff_inter=c["perf"]["alltoall_efficiency_inter"], budget=float(budget),
               device=hw.device,
               kernel_fraction=(c["sharding"]["dense_kernel_bandwidth_fraction"]
                                if assumed(job).embedding_kernels == "per_table" else 1.0))


def tables_in(spec) -> list[TableIn]:
    m = spec.model
    # sequence: DIN's behaviour sequence, an EmbeddingCollection in the trainer
    return [TableIn(t.name, int(t.rows), int(t.dim or m.embedding_dim), float(t.pooling_factor),
                    is_sequence(m, t), t.sharding) for t in m.tables]


def check_pins(spec, device: str) -> None:
    """A pinned type the target or the table's TorchRec module cannot execute is bad input
    (exit 2), said in one line (validate says the module part already; this covers specs
    built in code)."""
    ok = constants()["sharding"]["supported"][device]
    m = spec.model
    for path, msg in pin_problems(m):
        raise SpecError(f"{spec.where(*path)}: {msg}")
    if m.sharding not in ("auto",) and PIN[m.sharding] not in ok:
        raise SpecError(f"{spec.where('model', 'sharding')}: {m.sharding} cannot run on this "
                        f"target ({device}: {', '.join(ok)})")
    for i, t in enumerate(m.tables):
        if t.sharding and t.sharding not in ok:
            raise SpecError(f"{spec.where('model', 'tables', i, 'sharding')}: {t.sharding} cannot "
                            f"run on this target ({device}: {', '.join(ok)})")


def _contexts(spec, hw: Hardware, fixed: Fixed, capacity: int, nodes: int, gpn: int,
              dense_s: float, dense_bwd_s: float, dense_ar_bytes: float) -> tuple[Ctx, StepCtx]:
    c = constants()
    ctx = _ctx(spec, hw, capacity - fixed.total, nodes, gpn)
    sc = StepCtx(dense_s=dense_s, dense_bwd_s=dense_bwd_s, dense_ar_bytes=dense_ar_bytes,
                 overlap=c["perf"]["allreduce_overlap_with_dense_backward"],
                 host=host_work(spec, hw.device, len(fixed.dense.gemms)),
                 grad_accum=spec.job.grad_accumulation,
                 latency_s=collective_latency_seconds(hw.device, nodes * gpn, nodes),
                 overlap_embedding=spec.job.embedding_overlap == "full")
    return ctx, sc


def rate(spec, hw: Hardware, fixed: Fixed, capacity: int, nodes: int, gpn: int, dense_s: float,
         dense_bwd_s: float, dense_ar_bytes: float,
         assignment: list[tuple[str, list[int], int]]) -> Eval:
    """Our model's rating of a given plan: per table (sharding type, ranks, shards); ranks
    [] = let our partitioner place it. How another planner's choice is costed here."""
    ctx, sc = _contexts(spec, hw, fixed, capacity, nodes, gpn, dense_s, dense_bwd_s, dense_ar_bytes)
    opts, pinned = [], {}
    for i, (t, (kind, ranks, pieces)) in enumerate(zip(tables_in(spec), assignment)):
        if kind == "table_row_wise" and nodes == 1:
            kind = "row_wise"          # TorchRec's table_row_wise on one host is row-wise over it
        if kind == "column_wise" and pieces == 1:
            kind = "table_wise"        # one column shard holds the whole table on one rank
        cands = options(ctx, i, t.rows, t.dim, t.pooling_factor, t.sequence, (kind,))
        if kind == "column_wise":
            cands = [o for o in cands if o.pieces == pieces]
        if not cands:
            raise ValueError(f"{t.name}: no {kind} option with {pieces} shard(s) in this model")
        opts.append(cands[0])
        if ranks and kind != "data_parallel":
            pinned[i] = list(ranks)
    return evaluate(ctx, sc, opts, pinned)


def _kernel(o, dim: int) -> str:
    """TorchRec compute kernel of one table's plan (reclaunch.spec.sharders.KERNELS): dense for
    data-parallel; fused where FBGEMM's TBE takes the shard width (divisible by 4), else dense,
    so e.g. dim-18 tables do not fail at start-up. kinds_for never plans a type without one."""
    width = o.dim if o.kind == "column_wise" and o.dim else dim
    return kernel_for(o.kind, width) or "dense"


def plan_sharding(spec, hw: Hardware, fixed: Fixed, capacity: int, nodes: int, gpn: int,
                  dense_s: float, dense_bwd_s: float, dense_ar_bytes: float):
    """-> (Sharding, Eval of the chosen plan, (weights, state, grad, io) of the fullest rank)."""
    c = constants()
    check_pins(spec, hw.device)
    ctx, sc = _contexts(spec, hw, fixed, capacity, nodes, gpn, dense_s, dense_bwd_s, dense_ar_bytes)
    tins = tables_in(spec)
    pin_all = PIN.get(spec.model.sharding)
    chosen, ev, uniform = search(ctx, sc, tins, pin_all)
    shards = [TableShard(name=t.name, rows=t.rows, dim=t.dim, pooling_factor=t.pooling_factor,
                         feature=t.name, sequence=t.sequence, sharding_type=o.kind,
                         compute_kernel=_kernel(o, t.dim),
                         # RECLAUNCH_SHARDING: a data-parallel table lists no ranks (it is on all)
                         ranks=[] if o.kind == "data_parallel" else list(ev.ranks[i]),
                         pinned=bool(t.pin or pin_all), memory_bytes_per_rank=o.mem,
                         step_seconds_per_rank=o.piece_s + o.dp_opt_s)
              for i, (t, o) in enumerate(zip(tins, chosen))]
    held = [0] * ctx.world
    for i, o in enumerate(chosen):
        if o.kind != "data_parallel":
            for r in ev.ranks[i]:
                held[r] += 1
    per_rank = [RankLoad(r, ev.mem[r], ev.comp[r], ev.comm[r], held[r]) for r in range(ctx.world)]
    fullest = max(range(ctx.world), key=lambda r: (ev.mem[r], -r))
    parts = [0.0, 0.0, 0.0, 0.0]
    for i, o in enumerate(chosen):
        if fullest in ev.ranks[i]:
            for k in range(4):
                parts[k] += o.parts[k]
    alts = {k: (None if e.overflow > 0 else e.total) for k, e in uniform.items()}
    sh = Sharding(tables=shards, per_rank=per_rank, world_size=ctx.world,
                  critical_rank=ev.critical, alternatives=alts)
    sh.stands_on = {
        "estimator": c["sharding"]["source"],
        "hbm_gbs": hw.hbm_gbs, "stream_gbs": hw.stream, "intra_node_busbw_gbs": hw.intra_gbs,
        "inter_node_busbw_gbs": hw.inter_gbs,
        "alltoall_efficiency": [ctx.a2a_eff_intra, ctx.a2a_eff_inter],
        "collective_latency_seconds": sc.latency_s, "supported": c["sharding"]["supported"][hw.device],
        "embedding_budget_bytes_per_rank": ctx.budget,
    }
    sh.explanation = _explain(spec, sh, ev, uniform, ctx, pin_all, capacity)
    for t, o in zip(tins, chosen):
        want = t.pin or pin_all
        if want and o.kind != want:
            sh.explanation.append(f"{t.name}: {want} cannot be built on {ctx.world} rank(s) of "
                                  f"{ctx.gpus_per_node} per node with dim {t.dim}; {o.kind} instead")
    return sh, ev, tuple(parts)


def _explain(spec, sh: Sharding, ev: Eval, uniform: dict[str, Eval], ctx: Ctx, pin_all,
             capacity: int) -> list[str]:
    c = constants()
    counts: dict[str, int] = {}
    for t in sh.tables:
        counts[t.sharding_type] = counts.get(t.sharding_type, 0) + 1
    mix = ", ".join(f"{n} {k}" for k, n in counts.items())
    how = ("pinned by the spec" if pin_all else
           "chosen per table by modeled step time (TorchRec-style estimator; seeded with "
           "TorchRec's heuristics, greedy and uniform proposals, then improved by local moves)")
    lines = [f"sharding: {mix}; {how}"]
    seq = [t.name for t in sh.tables if t.sequence]
    if seq:
        lines.append(f"{', '.join(seq)}: behaviour sequence, a TorchRec EmbeddingCollection: "
                     f"{', '.join(MODULE_SHARDING[EC])} only (torchrec {TORCHREC_VERSION} sharder)")
    alt = [f"{SHORT[k]} {e.total * 1e3:.2f} ms" + (" (does not fit)" if e.overflow > 0 else "")
           for k, e in uniform.items()]
    if alt:
        lines.append(f"this plan {ev.total * 1e3:.2f} ms per step; every table one type: " + ", ".join(alt))
    frac = c["memory"]["data_parallel_max_embedding_fraction"]
    total = sum(table_bytes(t.rows, t.dim, spec.model.embedding_dtype) for t in sh.tables)
    rule = "data parallel" if total <= frac * capacity else "model parallel"
    lines.append(f"the seed's rule of thumb (shard once embeddings pass {frac:.0%} of one GPU) says "
                 f"{rule}: embeddings {total / GIB:.2f} GiB; it is only a rule, the plan follows the model")
    lines.append(f"figures stand on: lookups at {ctx.hbm_gbs:.0f} GB/s, all-to-all at "
                 f"{ctx.intra_gbs * ctx.a2a_eff_intra:.1f} GB/s per rank in a node and "
                 f"{ctx.inter_gbs / ctx.gpus_per_node * ctx.a2a_eff_inter:.2f} GB/s per rank across nodes "
                 f"(fabric busbw x efficiency), TorchRec 1.8.0 estimator constants (planner.yaml sharding)")
    if sh.model_parallel and ctx.world > 1 and spec.spot.enabled:
        lines.append("model parallel: sharded tables cannot be resharded on resume, so the elastic "
                     "job keeps its world size fixed (min = max nodes); a reclaimed node is waited for")
    return lines
