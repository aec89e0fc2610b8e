"""Memory per GPU (reference/recsys.md "Memory"); the sharding itself is sharding.py's.

Everything here is pure arithmetic on the Spec's model section; constants come from
data/planner.yaml. Byte counts are per GPU unless a name says otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from reclaunch.planner.constants import constants, dtype_bytes
from reclaunch.planner.model import Memory

GIB = 1 << 30
MIB = 1 << 20


def table_bytes(rows: int, dim: int, dtype: str = "fp32") -> int:
    """Embedding weights of one table: rows x dim x bytes (1e6 x 64 fp32 = 244 MiB)."""
    return int(rows) * int(dim) * dtype_bytes(dtype)


def optimizer_state_bytes(weight_bytes: int, optimizer: str, dim: int = 1) -> int:
    """Optimizer state for `weight_bytes` of weights: SGD 0, Adagrad 1, Adam 2, row-wise 1/dim."""
    mult = constants()["memory"]["optimizer_state_multiplier"][optimizer]
    if mult == "per_row":
        return int(math.ceil(weight_bytes / max(dim, 1)))
    return int(weight_bytes * float(mult))


# eq/repr off: none compares or prints these (issue 25: fewer methods to create at import)
@dataclass(eq=False, repr=False)
class DenseShape:
    """Dense side of the model: parameter count, forward FLOPs and activation widths per sample."""

    params: int = 0
    flops_fwd: float = 0.0
    act_width: int = 0            # sum of activation widths per sample (elements)
    interaction: str = "concat"
    layers: dict[str, int] = field(default_factory=dict)   # block -> params (traceable)
    # (in, out, rows per sample) of every matrix multiply: perf.py costs each GEMM by shape.
    gemms: list[tuple[int, int, float]] = field(default_factory=list)


def _mlp(d_in: int, widths: list[int], shape: DenseShape, block: str, per_sample: float = 1.0) -> int:
    params = 0
    for w in widths:
        params += d_in * w + w
        shape.gemms.append((d_in, w, per_sample))
        shape.flops_fwd += 2.0 * d_in * w * per_sample
        shape.act_width += int(w * per_sample)
        d_in = w
    shape.params += params
    shape.layers[block] = shape.layers.get(block, 0) + params
    return d_in


def dense_shape(model) -> DenseShape:
    """Params and FLOPs of bottom MLP, interaction (dot / cross / FM / DIN attention) and top MLP."""
    kind = constants()["interaction"].get(model.preset, "concat")
    shape = DenseShape(interaction=kind)
    dims = [t.dim or model.embedding_dim for t in model.tables]
    d = model.embedding_dim
    if model.bottom_mlp and model.dense_features:
        dense_out = _mlp(model.dense_features, list(model.bottom_mlp), shape, "bottom_mlp")
    else:
        dense_out = model.dense_features
    if kind == "dot":
        # DLRM: pairwise dots of the table vectors and the bottom-MLP output, plus that output.
        n = len(dims) + (1 if dense_out else 0)
        pairs = n * (n - 1) // 2
        shape.flops_fwd += 2.0 * pairs * d
        shape.act_width += pairs + n * d
        top_in = pairs + dense_out
    elif kind == "cross":
        # DCNv2: x0 = concat; each layer x_{l+1} = x0 * (U (V x_l) + b) + x_l (low rank r).
        x0 = sum(dims) + dense_out
        r = model.cross_low_rank
        per_layer = (2 * x0 * r + x0) if r else (x0 * x0 + x0)
        shape.params += per_layer * model.cross_layers
        shape.layers["cross"] = per_layer * model.cross_layers
        shape.flops_fwd += 2.0 * (per_layer - x0) * model.cross_layers
        for _ in range(model.cross_layers):
            shape.gemms.extend([(x0, r, 1.0), (r, x0, 1.0)] if r else [(x0, x0, 1.0)])
        shape.act_width += x0 * (model.cross_layers + 1) + (r or 0) * model.cross_layers
        top_in = x0
    elif kind == "attention":
        # DIN: an attention MLP scores each of history_length behaviours against the candidate,
        # over the sequence features (tables looked up more than once per sample).
        seq_dim = sum(dm for dm, t in zip(dims, model.tables) if t.pooling_factor > 1) or d
        hist = max(model.history_length, 1)
        att_in = 4 * seq_dim
        out = _mlp(att_in, list(model.attention_mlp), shape, "attention_mlp", per_sample=hist)
        shape.params += out + 1
        shape.layers["attention_mlp"] += out + 1
        shape.flops_fwd += 2.0 * out * hist + 4.0 * seq_dim * hist
        shape.act_width += att_in * hist
        top_in = sum(dims) + dense_out
    else:
        # FM (DeepFM) adds sum-square interactions without parameters; concat feeds the MLP.
        if kind == "fm":
            shape.flops_fwd += 4.0 * sum(dims)
        top_in = sum(dims) + dense_out
    widths = list(model.mlp)
    if not widths or widths[-1] != 1:
        widths.append(1)          # the logit
    _mlp(top_in, widths, shape, "top_mlp")
    shape.layers["top_mlp_input"] = top_in
    return shape


def input_bytes_per_sample(model) -> float:
    c = constants()["memory"]
    return sum(t.pooling_factor for t in model.tables) * c["index_bytes"] + 4 * model.dense_features


@dataclass(eq=False, repr=False)
class Fixed:
    """What every GPU holds whatever the sharding: dense weights/grads/state, activations and
    TorchRec's reservation (HeuristicalStorageReservation: 15% HBM, dense x6, inputs x20)."""

    dense: DenseShape
    dense_w: int
    dense_g: int
    dense_o: int
    acts: int
    reserve: int

    @property
    def total(self) -> int:
        return self.dense_w + self.dense_g + self.dense_o + self.acts + self.reserve


@dataclass(eq=False, repr=False)
class MemoryResult:
    """assemble()'s result: the plan's Memory plus what the rest of the plan needs."""

    memory: Memory
    dense: DenseShape
    dp_table_bytes: int           # weights of tables kept data parallel (all-reduced)
    notes: list[str]


def fixed_part(spec, capacity_bytes: int) -> Fixed:
    c = constants()["memory"]
    m, job = spec.model, spec.job
    act_b = dtype_bytes(job.precision)
    dense = dense_shape(m)
    dims = sum(t.dim or m.embedding_dim for t in m.tables)
    dense_opt = c["dense_optimizer"][job.optimizer]
    master = c["master_weight_bytes"]
    dense_w = dense.params * master
    if job.precision in c["mixed_precision"]:
        dense_w += dense.params * act_b             # low-precision working copy
    dense_g = dense.params * master
    dense_o = optimizer_state_bytes(dense.params * master, dense_opt)
    batch = job.batch_size
    acts = int(batch * (dense.act_width * c["activation_store_factor"] + dims) * act_b)
    reserve = int(capacity_bytes * c["reserve_hbm_fraction"]
                  + batch * input_bytes_per_sample(m) * c["reserve_input_multiplier"]
                  + max(0, dense.params * master * c["reserve_dense_multiplier"]
                        - (dense_w + dense_g + dense_o)))
    return Fixed(dense, dense_w, dense_g, dense_o, acts, reserve)


def fused_table_sizes(spec) -> list[tuple[str, int]]:
    """(name, weights + optimizer state) per table: a sharded table's resident bytes."""
    m, job = spec.model, spec.job
    out = []
    for t in m.tables:
        d = t.dim or m.embedding_dim
        w = table_bytes(t.rows, d, m.embedding_dtype)
        out.append((t.name, w + optimizer_state_bytes(w, job.optimizer, d)))
    return out


def assemble(spec, fixed: Fixed, sharding, parts: tuple[float, float, float, float],
             capacity_bytes: int, world: int) -> MemoryResult:
    """Memory per GPU on the rank holding the most embedding bytes.

    `parts`: that rank's (weights, optimizer state, gradients, io buffers) of its shards."""
    w, state, grad, io = parts
    m = spec.model
    weights_total = sum(table_bytes(t.rows, t.dim or m.embedding_dim, m.embedding_dtype)
                        for t in m.tables)
    total = int(w + state + grad + io) + fixed.total
    budget = capacity_bytes - fixed.total
    by_type = {t.name: t.sharding_type for t in sharding.tables}
    dp_bytes = sum(table_bytes(t.rows, t.dim, m.embedding_dtype)
                   for t in sharding.tables if t.sharding_type == "data_parallel")
    mem = Memory(
        embedding_bytes=int(w), dense_bytes=int(fixed.dense_w),
        gradient_bytes=int(fixed.dense_g + grad), optimizer_bytes=int(fixed.dense_o + state),
        activation_bytes=int(fixed.acts + io), reserve_bytes=fixed.reserve,
        total_bytes_per_gpu=total, capacity_bytes_per_gpu=int(capacity_bytes),
        fits=total <= capacity_bytes,
        parallelism="model" if sharding.model_parallel else "data",
        gpus_needed=_gpus_needed(fused_table_sizes(spec), budget, "auto"),
        sharding=by_type, total_embedding_bytes=weights_total)
    return MemoryResult(mem, fixed.dense, dp_bytes, [])


def _place(sizes: list[tuple[str, int]], world: int, budget: float, forced: str):
    """Memory-only packing for `gpus_needed`: largest table first onto the least loaded GPU;
    tables larger than one GPU's budget are split row-wise over every GPU."""
    loads = [0.0] * world
    plan: dict[str, str] = {}
    rowwise = 0.0
    for name, b in sorted(sizes, key=lambda x: -x[1]):
        if forced == "row_wise" or b > budget:
            plan[name] = "row_wise"
            rowwise += b / world
        else:
            i = min(range(world), key=loads.__getitem__)
            loads[i] += b
            plan[name] = "table_wise"
    return max(loads) + rowwise, plan


def _gpus_needed(sizes: list[tuple[str, int]], budget: float, forced: str) -> int:
    """Fewest GPUs the sharded tables fit on; 0 when the dense part alone does not fit."""
    if budget <= 0:
        return 0
    total = sum(s for _, s in sizes)
    n = max(1, math.ceil(total / budget))
    for _ in range(64):
        load, _ = _place(sizes, n, budget, forced)
        if load <= budget:
            return n
        n = max(n + 1, math.ceil(n * 1.05))
    return n
