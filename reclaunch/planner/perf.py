"""Step time: embedding lookups vs HBM, dense FLOPs vs peak, all-reduce and all-to-all.

Formulas from reference/recsys.md (TorchRec perf estimator) and the effective bus bandwidth
of the fabric (reference/fabrics.md, via reclaunch.fabric when present).
"""

from __future__ import annotations

from dataclasses import dataclass

from reclaunch.planner.constants import constants, dtype_bytes
from reclaunch.planner.model import Comm, StepTime

GB = 1e9


def allreduce_seconds(nbytes: float, n: int, busbw_gbs: float) -> float:
    """Ring all-reduce: 2(n-1)/n x bytes / effective bus bandwidth (GB/s)."""
    if n <= 1 or nbytes <= 0:
        return 0.0
    return 2.0 * (n - 1) / n * nbytes / (busbw_gbs * GB)


def hierarchical_allreduce_seconds(nbytes: float, gpus_per_node: int, nodes: int,
                                   intra_gbs: float, inter_gbs: float) -> float:
    """Intra-node ring over NVLink, then across nodes over the fabric (NCCL's tree/ring split).
    The inter-node busbw is per node (nccl-tests busbw), so each GPU's 1/G share cancels."""
    return (allreduce_seconds(nbytes, gpus_per_node, intra_gbs)
            + allreduce_seconds(nbytes, nodes, inter_gbs))


def dim_penalty(dim: int) -> float:
    for p in constants()["perf"]["dim_penalty"]:
        if dim < p["below"]:
            return float(p["factor"])
    return 1.0


def lookup_bytes_per_sample(model) -> float:
    """TorchRec estimator forward bytes per sample, summed over tables, with D penalties:
    L*8 + L*max(D,32)*s + D*s (ids, rows gathered, pooled output)."""
    c = constants()["perf"]
    s = dtype_bytes(model.embedding_dtype)
    out = 0.0
    for t in model.tables:
        d = t.dim or model.embedding_dim
        L = t.pooling_factor
        raw = L * c["lookup_index_bytes"] + L * max(d, c["lookup_min_dim"]) * s + d * s
        out += raw * dim_penalty(d)
    return out


@dataclass
class Hardware:
    """What one GPU (or CPU process for cloud: local) can do."""

    hbm_gbs: float            # achieved gather bandwidth, GB/s
    peak_tflops: float        # at the job's precision
    utilisation: float
    intra_gbs: float          # effective all-reduce busbw inside a node
    inter_gbs: float          # effective all-reduce busbw across nodes (per node)


def step_time(spec, hw: Hardware, mem, nodes: int, gpus_per_node: int):
    """(StepTime, Comm, samples/s for the cluster)."""
    c = constants()["perf"]
    m, job = spec.model, spec.job
    world = nodes * gpus_per_node
    B = job.batch_size
    act_b = dtype_bytes(job.precision)

    # Embeddings: sharded or not, each GPU does ~B samples' worth of lookups per step.
    fwd = B * lookup_bytes_per_sample(m) / (hw.hbm_gbs * GB)
    emb_s = fwd * (1.0 + c["embedding_backward_multiplier"])

    flops = mem.dense.flops_fwd * (1.0 + c["dense_backward_multiplier"]) * B
    dense_s = flops / (hw.peak_tflops * 1e12 * hw.utilisation)
    dense_bwd = dense_s * c["dense_backward_multiplier"] / (1.0 + c["dense_backward_multiplier"])

    master = constants()["memory"]["master_weight_bytes"]
    ar_bytes = mem.dense.params * master + mem.dp_table_bytes
    ar_s = hierarchical_allreduce_seconds(ar_bytes, gpus_per_node, nodes, hw.intra_gbs, hw.inter_gbs)
    ar_s /= job.grad_accumulation          # one all-reduce per optimizer step

    a2a_s = 0.0
    if mem.memory.parallelism == "model" and world > 1:
        dims = sum(t.dim or m.embedding_dim for t in m.tables)
        # pooled outputs forward + their gradients backward, B*D*s per table per direction
        out_bytes = 2.0 * B * dims * act_b
        intra_frac = (gpus_per_node - 1) / world
        inter_frac = (world - gpus_per_node) / world
        intra_bw = hw.intra_gbs * c["alltoall_efficiency_intra"] * GB
        inter_bw = hw.inter_gbs / gpus_per_node * c["alltoall_efficiency_inter"] * GB
        a2a_s = out_bytes * intra_frac / intra_bw
        if inter_frac > 0:
            a2a_s += out_bytes * inter_frac / inter_bw

    hidden = min(ar_s, dense_bwd * c["allreduce_overlap_with_dense_backward"])
    exposed = (ar_s - hidden) + a2a_s
    total = emb_s + dense_s + exposed + c["step_overhead_seconds"]
    step = StepTime(embedding_seconds=emb_s, dense_compute_seconds=dense_s,
                    allreduce_seconds=ar_s, alltoall_seconds=a2a_s,
                    exposed_comm_seconds=exposed, total_seconds=total)
    used = (2.0 * (world - 1) / world * ar_bytes / (ar_s * job.grad_accumulation) / GB
            if ar_s > 0 else (hw.intra_gbs if nodes == 1 else hw.inter_gbs))
    comm = Comm(allreduce_seconds_per_step=ar_s, alltoall_seconds_per_step=a2a_s,
                bandwidth_gbps_used=used, intra_node_gbps=hw.intra_gbs,
                inter_node_gbps=hw.inter_gbs)
    return step, comm, world * B / total
