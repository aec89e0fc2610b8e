"""Per-table sharding rated by modeled step time, the way TorchRec's planner does it.

    options (shard_cost.py)  every executable sharding type per table, with per-shard time
                             and memory (TorchRec's estimator formulas, our hardware figures)
    kinds_for                which types a table may get (device, TorchRec module, kernel,
                             no splitting of tiny tables or into more shards than rows)
    partition                largest shard first onto the least-loaded rank that has the
                             memory for it (TorchRec's GreedyPerfPartitioner), or given ranks
    evaluate                 the step a plan is rated by
    shard_search.py          the search over these (seeds, bounded local improvement)

The step is the slowest rank's embedding work (lookups + the all-to-all it sends or
receives) plus the dense compute, the all-reduce overlap does not hide (dense gradients +
data-parallel tables), fixed overhead and collective latencies.
`model.sharding` / a table's `sharding` pin the type; the ranks are still planned.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import NamedTuple

from reclaunch.planner.constants import constants
from reclaunch.planner.shard_cost import Ctx, Option, options
from reclaunch.planner.perf import Host, hierarchical_allreduce_seconds
from reclaunch.spec.sharders import EBC, EC, MODULE_SHARDING, PIN, kernel_for  # noqa: F401

KINDS = MODULE_SHARDING[EBC]   # every type the planner rates: the bag sharder takes them all


# A NamedTuple, not a frozen dataclass: an immutable value that costs a quarter to create at
# import (issue 25), hashed and compared field by field just the same.
class StepCtx(NamedTuple):
    """The non-embedding part of the step a sharding plan is rated against."""

    dense_s: float
    dense_bwd_s: float
    dense_ar_bytes: float
    overlap: float
    host: Host                    # what the CPU issues per step (planner/perf.py host_work)
    grad_accum: int
    latency_s: float              # per collective
    overlap_embedding: bool = False   # job.embedding_overlap: full (planner/perf.py embedding_path)

    def device(self, sparse_s: float, exposed_ar_s: float, latency_s: float) -> float:
        """The GPU's path: the critical rank's embedding work + all-to-all `sparse_s`, the
        dense part beside or after it, the all-reduce dense backward does not hide."""
        path = sparse_s + latency_s
        path = max(path, self.dense_s) if self.overlap_embedding else path + self.dense_s
        return path + exposed_ar_s

    def step(self, sparse_s: float, exposed_ar_s: float, latency_s: float, groups: int) -> float:
        """Step seconds, with `groups` embedding kernel groups to launch: the device's path, or
        the host's when the CPU cannot issue the step's kernels as fast as the GPU runs them."""
        device = self.device(sparse_s, exposed_ar_s, latency_s)
        host = self.host.seconds(groups)
        return max(device, host) if self.host.overlaps_device else device + host


def groups_of(kinds: dict[str, int], dp_tables: int) -> int:
    """Embedding kernel groups a fused stack launches: one per sharding type in use (TorchRec
    groups tables by sharding type and compute kernel), the data-parallel tables one more."""
    return sum(1 for v in kinds.values() if v > 0) + (1 if dp_tables > 0 else 0)


class TableIn(NamedTuple):   # a NamedTuple like StepCtx
    """One embedding table as the sharding search sees it."""

    name: str
    rows: int
    dim: int
    pooling_factor: float
    sequence: bool
    pin: str | None


# eq/repr off: none compares or prints these (issue 25: fewer methods to create at import)
@dataclass(eq=False, repr=False)
class Eval:
    """A sharding plan's rating: per-rank compute, comms and memory, and the step they give."""

    overflow: float
    total: float
    comp: list[float] = field(default_factory=list)
    comm: list[float] = field(default_factory=list)
    mem: list[float] = field(default_factory=list)
    ranks: list[list[int]] = field(default_factory=list)
    critical: int = 0
    ar_s: float = 0.0
    exposed_ar_s: float = 0.0
    latency_s: float = 0.0
    dp_bytes: float = 0.0
    send: list[float] = field(default_factory=list)    # seconds each rank sends (uniform incl.)
    recv: float = 0.0                                   # pooled bytes each rank receives
    kinds: dict[str, int] = field(default_factory=dict)  # non-DP sharding groups in use
    dp_tables: int = 0                                   # data-parallel tables
    device: float = 0.0       # the GPU's path alone: what tells plans apart when the host bounds

    @property
    def key(self) -> tuple[float, float, float]:
        return (self.overflow, self.total, self.device)

    @property
    def groups(self) -> int:
        return groups_of(self.kinds, self.dp_tables)


def _place(ctx: Ctx, opts: list[Option], budget_left: float, by_mem: bool,
           fixed: dict[int, list[int]] | None = None):
    """Greedy partition of rank- and node-scoped shards -> (comp, send, mem, ranks).
    `fixed`: option index -> ranks already decided (rating someone else's plan)."""
    W, G = ctx.world, ctx.gpus_per_node
    comp, send, mem = [0.0] * W, [0.0] * W, [0.0] * W
    ranks: dict[int, list[int]] = {}
    if fixed:
        for i, rs in fixed.items():
            o = opts[i]
            if o.scope == "all":
                continue
            ranks[o.table] = list(rs)
            for r in rs:
                comp[r] += o.compute_s
                send[r] += o.send_s
                mem[r] += o.mem
        opts = [o for i, o in enumerate(opts) if i not in fixed]
    # Node-scoped shards go first, so every rank of a node carries the same load then.
    nodes = [o for o in opts if o.scope == "node"]
    if nodes:
        nheap = [(comp[n * G] + send[n * G], n) for n in range(ctx.nodes)]
        n_mem = [mem[n * G] for n in range(ctx.nodes)]
        for o in sorted(nodes, key=lambda o: -(o.mem if by_mem else o.piece_s)):
            skipped, best = [], None
            while nheap:
                item = heapq.heappop(nheap)
                if n_mem[item[1]] + o.mem <= budget_left:
                    best = item
                    break
                skipped.append(item)
            if best is None:                               # nowhere fits: least memory
                best = min(skipped, key=lambda it: (n_mem[it[1]], it[1]))
                skipped.remove(best)
            for item in skipped:
                heapq.heappush(nheap, item)
            n = best[1]
            n_mem[n] += o.mem
            heapq.heappush(nheap, (best[0] + o.piece_s, n))
            ranks[o.table] = list(range(n * G, (n + 1) * G))
            for r in ranks[o.table]:
                comp[r] += o.compute_s
                send[r] += o.send_s
                mem[r] += o.mem
    pieces = [o for o in opts if o.scope == "rank"]
    pieces.sort(key=lambda o: (-(o.mem if by_mem else o.piece_s), o.table))
    heap = [(comp[r] + send[r], r) for r in range(W)]
    heapq.heapify(heap)
    for o in pieces:
        got: list[int] = []
        skipped = []
        while len(got) < o.pieces and heap:
            load, r = heapq.heappop(heap)
            if load != comp[r] + send[r]:
                continue                                   # stale entry
            if mem[r] + o.mem > budget_left and len(skipped) + len(got) < W:
                skipped.append((load, r))
                continue
            got.append(r)
        for item in skipped:
            heapq.heappush(heap, item)
        if len(got) < o.pieces:                            # nowhere fits: least memory
            free = sorted((r for r in range(W) if r not in got), key=lambda r: (mem[r], r))
            for r in free[:o.pieces - len(got)]:
                got.append(r)
        for r in got:
            comp[r] += o.compute_s
            send[r] += o.send_s
            mem[r] += o.mem
            heapq.heappush(heap, (comp[r] + send[r], r))
        ranks[o.table] = sorted(got) if o.kind == "column_wise" else got
    return comp, send, mem, ranks


def evaluate(ctx: Ctx, sc: StepCtx, opts: list[Option],
             fixed: dict[int, list[int]] | None = None) -> Eval:
    W, G = ctx.world, ctx.gpus_per_node
    u_comp = u_send = u_mem = recv = dp_bytes = 0.0
    kinds: dict[str, int] = {}
    dp_tables = 0
    for o in opts:
        recv += o.recv_bytes
        if o.kind != "data_parallel":
            kinds[o.kind] = kinds.get(o.kind, 0) + 1
        else:
            dp_tables += 1
        if o.scope == "all":
            u_comp += o.compute_s + o.dp_opt_s
            u_send += o.send_s
            u_mem += o.mem
            dp_bytes += o.dp_bytes
    best = None
    budget = ctx.budget
    for by_mem in (False, True):
        comp, send, mem, ranks = _place(ctx, opts, budget - u_mem, by_mem, fixed)
        over = sum(m + u_mem - budget for m in mem if m + u_mem > budget)
        if best is None or over < best[0]:
            best = (over, comp, send, mem, ranks)
        if over <= 0:
            break
    over, comp, send, mem, ranks = best
    recv_s = _recv_seconds(ctx, recv)
    comp = [c + u_comp for c in comp]
    send = [x + u_send for x in send]
    comm = [x if x > recv_s else recv_s for x in send]
    mem = [m + u_mem for m in mem]
    loads = [a + b for a, b in zip(comp, comm)]
    crit = loads.index(max(loads))
    ar, exposed = _allreduce(ctx, sc, dp_bytes)
    lat = _latency(ctx, sc, kinds)
    total = sc.step(comp[crit] + comm[crit], exposed, lat, groups_of(kinds, dp_tables))
    rank_lists = [ranks.get(o.table, list(range(W)) if o.scope == "all" else [])
                  for o in opts]
    return Eval(over, total, comp, comm, mem, rank_lists, crit, ar, exposed, lat, dp_bytes,
                send, recv, kinds, dp_tables, sc.device(comp[crit] + comm[crit], exposed, lat))


def _recv_seconds(ctx: Ctx, recv: float) -> float:
    """Forward + backward seconds for the pooled outputs every rank receives."""
    W, G = ctx.world, ctx.gpus_per_node
    if W <= 1 or not recv:
        return 0.0
    rs = 0.0
    if G > 1:
        rs += (G - 1) / W / (ctx.intra_gbs * ctx.a2a_eff_intra)
    if W > G:
        rs += (W - G) / W / (ctx.inter_gbs / G * ctx.a2a_eff_inter)
    return 2.0 * recv * rs / 1e9


def _allreduce(ctx: Ctx, sc: StepCtx, dp_bytes: float) -> tuple[float, float]:
    """(all-reduce seconds, the part dense backward does not hide)."""
    ar = hierarchical_allreduce_seconds(sc.dense_ar_bytes + dp_bytes, ctx.gpus_per_node,
                                        ctx.nodes, ctx.intra_gbs, ctx.inter_gbs) / sc.grad_accum
    return ar, ar - min(ar, sc.dense_bwd_s * sc.overlap)


def _latency(ctx: Ctx, sc: StepCtx, kinds: dict[str, int]) -> float:
    n = sum(1 for v in kinds.values() if v > 0)
    return n * constants()["sharding"]["collectives_per_group"] * sc.latency_s if ctx.world > 1 else 0.0


def quick(ctx: Ctx, sc: StepCtx, cur: list[Option], ev: Eval, i: int, alt: Option) -> tuple[float, float]:
    """(step, device path) if table i alone moved to `alt`, the others staying where they are
    (memory not checked): a cheap screen before a full re-partition confirms a move."""
    W, G = ctx.world, ctx.gpus_per_node
    old = cur[i]
    # The same float operations per rank, in list comprehensions (a generator resumes a frame
    # per rank); this screen runs for every candidate move of the search.
    dc, ds = old.compute_s + old.dp_opt_s, old.send_s
    if old.scope == "all":
        comp, send = [c - dc for c in ev.comp], [x - ds for x in ev.send]
    else:
        comp, send = list(ev.comp), list(ev.send)
        for r in ev.ranks[i]:
            comp[r] -= dc
            send[r] -= ds
    ac, as_ = alt.compute_s + alt.dp_opt_s, alt.send_s
    if alt.scope == "all":
        comp, send = [c + ac for c in comp], [x + as_ for x in send]
    else:
        loads = [a + b for a, b in zip(comp, send)]
        if alt.scope == "node":
            n = min(range(ctx.nodes), key=lambda n: max(loads[n * G:(n + 1) * G]))
            targets = range(n * G, (n + 1) * G)
        else:
            targets = heapq.nsmallest(alt.pieces, range(W), key=loads.__getitem__)
        for r in targets:
            comp[r] += ac
            send[r] += as_
    recv_s = _recv_seconds(ctx, ev.recv - old.recv_bytes + alt.recv_bytes)
    _, exposed = _allreduce(ctx, sc, ev.dp_bytes - old.dp_bytes + alt.dp_bytes)
    kinds = dict(ev.kinds)
    dp = ev.dp_tables
    for o, d in ((old, -1), (alt, 1)):
        if o.kind != "data_parallel":
            kinds[o.kind] = kinds.get(o.kind, 0) + d
        else:
            dp += d
    load = max([c + (x if x > recv_s else recv_s) for c, x in zip(comp, send)])
    lat = _latency(ctx, sc, kinds)
    return sc.step(load, exposed, lat, groups_of(kinds, dp)), sc.device(load, exposed, lat)


def kinds_for(ctx: Ctx, t: TableIn) -> tuple[str, ...]:
    """Sharding types table `t` may get here: what the device runs, what its TorchRec module
    takes (reclaunch.spec.sharders), what its kernel can run, and no splitting where it
    makes no sense (more shards than rows; tiny tables, which TorchRec and HugeCTR keep
    whole: splitting one buys no memory and adds collectives)."""
    sc = constants()["sharding"]
    device = sc["supported"][ctx.device]
    module = MODULE_SHARDING[EC if t.sequence else EBC]
    out = []
    for kind in KINDS:
        if kind not in device or kind not in module:
            continue
        if kind != "data_parallel" and kernel_for(kind, t.dim) is None:
            continue                                     # e.g. table_row_wise of a dim-18 table
        if kind == "row_wise" and t.rows < ctx.world:
            continue
        if kind == "table_row_wise" and t.rows < ctx.gpus_per_node:
            continue
        if kind in ("row_wise", "table_row_wise", "column_wise") and t.rows < sc["split_min_rows"]:
            continue
        out.append(kind)
    return tuple(out)


def table_options(ctx: Ctx, tables: list[TableIn], pin_all: str | None) -> list[list[Option]]:
    out = []
    for i, t in enumerate(tables):
        want = t.pin or pin_all
        if want == "table_row_wise" and ctx.nodes == 1:
            want = "row_wise"      # on one host TorchRec's table_row_wise is row-wise over it
        kinds = (want,) if want else kinds_for(ctx, t)
        opts = options(ctx, i, t.rows, t.dim, t.pooling_factor, t.sequence, kinds)
        if not opts:          # e.g. column_wise of an odd dim: fall back to the closest thing
            opts = options(ctx, i, t.rows, t.dim, t.pooling_factor, t.sequence, ("table_wise",))
        fit = [o for o in opts if o.mem <= ctx.budget]
        out.append(fit or [min(opts, key=lambda o: o.mem)])
    return out
