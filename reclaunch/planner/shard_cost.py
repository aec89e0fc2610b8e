"""What one table costs under each TorchRec sharding type: memory and time per shard.

The formulas follow TorchRec's planner estimators (pytorch/torchrec 1.8.0,
torchrec/distributed/planner/estimator/estimator.py for time, shard_estimators.py for
storage), evaluated with reclaunch's hardware figures (catalog HBM, measured fabric busbw)
instead of TorchRec's V100-era defaults. Everything is per training step and per rank:

    lookups   (B_served*L*8 + B_served*L*max(D,32)*s + outputs*D*s) * penalty(D) / kernel bw
              backward = embedding_backward_multiplier x forward (fused optimizer included)
    send      pooled outputs leave the shard's rank: to G-1 ranks over NVLink and W-G ranks
              over the inter-node fabric, forward and (gradients) backward
    storage   weights + optimizer state (+ a gradient copy for data-parallel tables)
              + the shard's input ids and output buffers (TorchRec _calculate_*_io_sizes)

Pure arithmetic; no torch. Types (`Option`) are consumed by sharding.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

from reclaunch.planner.constants import constants
from reclaunch.planner.perf import dim_penalty

GB = 1e9
INDEX_BYTES = 8            # int64 ids (TorchRec BIGINT_DTYPE)


# A NamedTuple, not a frozen dataclass: an immutable value that costs a quarter to create at
# import (issue 25), hashed and compared field by field just the same.
class Ctx(NamedTuple):
    """Everything a shard's cost depends on (hashable: results are cached per context)."""

    world: int
    gpus_per_node: int
    batch: int                     # per rank
    emb_bytes: int                 # bytes per embedding element (table dtype)
    out_bytes: int                 # bytes per pooled output / gradient element on the wire
    grad_bytes: int                # bytes per all-reduced gradient element (job.gradient_dtype)
    opt_mult: float                # optimizer state / weights (row-wise Adagrad: 1/dim, per table)
    rowwise_opt: bool
    hbm_gbs: float                 # fused-kernel gather bandwidth, GB/s
    stream_gbs: float              # elementwise bandwidth (dense optimizer), GB/s
    intra_gbs: float               # all-reduce busbw inside a node, GB/s per rank
    inter_gbs: float               # all-reduce busbw across nodes, GB/s per node
    a2a_eff_intra: float
    a2a_eff_inter: float
    budget: float                  # bytes per rank left for embedding shards
    device: str                    # "cuda" | "cpu": which sharding types can run
    # Sharded tables' lookup bandwidth / hbm_gbs: 1 where the stack runs fused kernels (FBGEMM
    # TBE), TorchRec's DENSE-kernel fraction where it runs one framework op per table
    # (spec/stacks.py per_table: nn.Embedding / Keras layers, their optimizer apart).
    kernel_fraction: float = 1.0

    @property
    def nodes(self) -> int:
        return max(1, self.world // max(self.gpus_per_node, 1))

    @property
    def sharded_gbs(self) -> float:
        return self.hbm_gbs * self.kernel_fraction


@dataclass(repr=False)   # eq: shard_search compares options
class Option:
    """One way to shard one table. `scope`: where its `pieces` go.

    rank: each piece on its own rank (table_wise: 1 piece; column_wise: k pieces);
    node: one piece on every rank of one node (table_row_wise);
    all:  one piece on every rank (row_wise, data_parallel).
    Times are seconds per step on the rank holding the piece (forward + backward).
    """

    table: int
    kind: str
    pieces: int
    scope: str
    compute_s: float
    send_s: float
    mem: float
    recv_bytes: float = 0.0        # pooled bytes each rank receives per direction
    dp_bytes: float = 0.0          # gradient bytes all-reduced (data_parallel)
    dp_opt_s: float = 0.0          # dense optimizer over the whole table, every rank
    dim: int = 0                   # column shard width (column_wise)
    parts: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)   # weights, state, grad, io
    piece_s: float = field(init=False, default=0.0)   # compute + send of one piece

    def __post_init__(self) -> None:
        if not any(self.parts):
            self.parts = (self.mem, 0.0, 0.0, 0.0)
        self.piece_s = self.compute_s + self.send_s

    def work(self, world: int) -> float:
        """Rank-seconds the option costs the cluster (TorchRec proposers rank by this)."""
        n = world if self.scope == "all" else self.pieces
        return n * (self.piece_s + self.dp_opt_s)


@lru_cache(maxsize=1024)
def _dim_terms(dim: int) -> tuple[int, float, float]:
    """(lookup width, penalty, 1 + backward multiplier) for a shard of `dim` columns."""
    perf = constants()["perf"]
    return (max(dim, perf["lookup_min_dim"]), dim_penalty(dim),
            1.0 + perf["embedding_backward_multiplier"])


def _lookup_s(ctx: Ctx, ids: float, outputs: float, dim: int, out_dim_bytes: float, bw_gbs: float) -> float:
    """Forward + backward seconds for `ids` lookups writing `outputs` vectors of `dim`."""
    width, penalty, fb = _dim_terms(dim)
    fwd = (ids * INDEX_BYTES + ids * width * ctx.emb_bytes + outputs * out_dim_bytes) * penalty / (bw_gbs * GB)
    return fwd * fb


def _send_s(ctx: Ctx, nbytes_per_peer: float, intra_peers: int, inter_peers: int,
            intra_eff: float, inter_eff: float) -> float:
    """Forward + backward seconds to move `nbytes_per_peer` to each peer from one rank."""
    G = ctx.gpus_per_node
    s = 0.0
    if intra_peers > 0:
        s += nbytes_per_peer * intra_peers / (ctx.intra_gbs * intra_eff * GB)
    if inter_peers > 0:
        s += nbytes_per_peer * inter_peers / (ctx.inter_gbs / G * inter_eff * GB)
    return 2.0 * s


def _state(ctx: Ctx, weight_bytes: float, dim: int) -> float:
    if ctx.rowwise_opt:
        return weight_bytes / max(dim, 1)
    return weight_bytes * ctx.opt_mult


def options(ctx: Ctx, index: int, rows: int, dim: int, pooling: float, sequence: bool,
            kinds: tuple[str, ...]) -> list[Option]:
    """Every executable way to shard one table (kinds: allowed sharding types)."""
    sc = constants()["sharding"]
    W, G, B = ctx.world, ctx.gpus_per_node, ctx.batch
    N = ctx.nodes
    outs_per_sample = pooling if sequence else 1.0       # sequence features are not pooled
    weights = float(rows) * dim * ctx.emb_bytes
    state = _state(ctx, weights, dim)
    ids_w = B * W * pooling                              # ids of the whole global batch
    out_w = B * W * outs_per_sample                      # output vectors of the global batch
    recv = B * outs_per_sample * dim * ctx.out_bytes     # what each rank gets back per table
    rs_eff = sc["reduce_scatter_efficiency"]
    out: list[Option] = []
    if "data_parallel" in kinds:
        dense_bw = ctx.hbm_gbs * sc["dense_kernel_bandwidth_fraction"]
        comp = _lookup_s(ctx, B * pooling, B * outs_per_sample, dim, dim * ctx.emb_bytes, dense_bw)
        io = B * pooling * INDEX_BYTES + B * outs_per_sample * dim * ctx.out_bytes
        # A replicated table's gradient joins the dense all-reduce, in the gradient dtype the
        # stack sends (Horovod --compress / DDP fp16 hooks), never wider than the table itself.
        wire = float(rows) * dim * min(ctx.emb_bytes, ctx.grad_bytes)
        # The dense optimizer sweeps the whole table every step, on every rank.
        opt_s = (weights * sc["data_parallel_optimizer_factor"]
                 / (ctx.stream_gbs * sc["dense_kernel_bandwidth_fraction"] * GB))
        out.append(Option(index, "data_parallel", W, "all", comp, 0.0,
                          weights * 2 + state + io, 0.0, wire if W > 1 else 0.0, opt_s,
                          parts=(weights, state, weights, io)))
    if W == 1:
        kinds = tuple(k for k in kinds if k in ("data_parallel", "table_wise"))
    if "table_wise" in kinds:
        comp = _lookup_s(ctx, ids_w, out_w, dim, dim * ctx.out_bytes, ctx.sharded_gbs)
        send = _send_s(ctx, B * outs_per_sample * dim * ctx.out_bytes, G - 1, W - G,
                       ctx.a2a_eff_intra, ctx.a2a_eff_inter)
        io = ids_w * INDEX_BYTES + out_w * dim * ctx.out_bytes
        out.append(Option(index, "table_wise", 1, "rank", comp, send, weights + state + io, recv,
                          parts=(weights, state, 0.0, io)))
    if "column_wise" in kinds:
        k = 2
        while k <= min(sc["column_wise_max_shards"], W) and dim % k == 0 \
                and dim // k >= sc["min_column_shard_dim"]:
            d = dim // k
            comp = _lookup_s(ctx, ids_w, out_w, d, d * ctx.out_bytes, ctx.sharded_gbs)
            send = _send_s(ctx, B * outs_per_sample * d * ctx.out_bytes, G - 1, W - G,
                           ctx.a2a_eff_intra, ctx.a2a_eff_inter)
            io = ids_w * INDEX_BYTES + out_w * d * ctx.out_bytes
            out.append(Option(index, "column_wise", k, "rank", comp, send,
                              (weights + state) / k + io, recv, dim=d,
                              parts=(weights / k, state / k, 0.0, io)))
            k *= 2
    if "row_wise" in kinds:
        # Each rank looks up 1/W of the ids and writes partial sums for the whole global
        # batch, reduce-scattered forward and all-gathered backward (+ batched copy).
        out_bytes = out_w * dim * ctx.out_bytes
        comp = (_lookup_s(ctx, ids_w / W, out_w, dim, dim * ctx.out_bytes, ctx.sharded_gbs)
                + out_bytes * sc["batched_copy_factor"] / (ctx.sharded_gbs * GB))
        send = _send_s(ctx, B * outs_per_sample * dim * ctx.out_bytes, G - 1, W - G, rs_eff, rs_eff)
        io = B * pooling * INDEX_BYTES + out_bytes
        out.append(Option(index, "row_wise", W, "all", comp, send,
                          (weights + state) / W + io, recv, parts=(weights / W, state / W, 0.0, io)))
    if "table_row_wise" in kinds and N > 1 and G > 1:
        # Row-wise inside one node (reduce-scatter over NVLink), then the node's G ranks
        # each send 1/G of the pooled outputs across nodes.
        out_bytes = out_w * dim * ctx.out_bytes
        comp = (_lookup_s(ctx, ids_w / G, out_w, dim, dim * ctx.out_bytes, ctx.sharded_gbs)
                + out_bytes * sc["batched_copy_factor"] / (ctx.sharded_gbs * GB))
        per_peer = B * outs_per_sample * dim * ctx.out_bytes
        send = (_send_s(ctx, per_peer * W / G, G - 1, 0, rs_eff, rs_eff)
                + _send_s(ctx, per_peer / G, 0, W - G, 1.0, ctx.a2a_eff_inter))
        io = ids_w / G * INDEX_BYTES + out_bytes
        out.append(Option(index, "table_row_wise", G, "node", comp, send,
                          (weights + state) / G + io, recv, parts=(weights / G, state / G, 0.0, io)))
    return out
