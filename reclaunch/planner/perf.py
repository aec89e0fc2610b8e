"""Step time: dense FLOPs vs peak, all-reduce; the embedding part (lookups vs HBM, all-to-all)
comes per rank from sharding.py. Formulas from reference/recsys.md (TorchRec perf estimator)
and the effective bus bandwidth of the fabric (reference/fabrics.md, via reclaunch.fabric).
"""

from __future__ import annotations

from dataclasses import dataclass

from reclaunch.planner.constants import constants
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


@dataclass
class Hardware:
    """What one GPU (or CPU process for cloud: local) can do."""

    hbm_gbs: float            # achieved gather bandwidth, GB/s
    peak_tflops: float        # at the job's precision
    utilisation: float
    intra_gbs: float          # effective all-reduce busbw inside a node
    inter_gbs: float          # effective all-reduce busbw across nodes (per node)
    device: str = "cuda"      # which sharding types can run (planner.yaml sharding.supported)
    stream_gbs: float = 0.0   # elementwise bandwidth (dense optimizer); 0 = hbm_gbs

    @property
    def stream(self) -> float:
        return self.stream_gbs or self.hbm_gbs


def dense_seconds(spec, hw: Hardware, dense) -> tuple[float, float]:
    """(dense forward + backward seconds, of which backward) per step on one GPU."""
    c = constants()["perf"]
    flops = dense.flops_fwd * (1.0 + c["dense_backward_multiplier"]) * spec.job.batch_size
    dense_s = flops / (hw.peak_tflops * 1e12 * hw.utilisation)
    return dense_s, dense_s * c["dense_backward_multiplier"] / (1.0 + c["dense_backward_multiplier"])


def step_time(spec, hw: Hardware, ev, dense_s: float, dense_ar_bytes: float, nodes: int,
              gpus_per_node: int):
    """(StepTime, Comm, samples/s for the cluster) of the sharding evaluation `ev`
    (reclaunch.planner.sharding.Eval: the slowest rank's embedding work, the all-reduce)."""
    c = constants()["perf"]
    job = spec.job
    world = nodes * gpus_per_node
    crit = ev.critical
    emb_s, a2a_s = ev.comp[crit], ev.comm[crit] + ev.latency_s
    ar_s = ev.ar_s
    exposed = ev.exposed_ar_s + a2a_s
    total = emb_s + dense_s + exposed + c["step_overhead_seconds"]
    step = StepTime(embedding_seconds=emb_s, dense_compute_seconds=dense_s,
                    allreduce_seconds=ar_s, alltoall_seconds=a2a_s,
                    exposed_comm_seconds=exposed, total_seconds=total)
    ar_bytes = dense_ar_bytes + ev.dp_bytes
    used = (2.0 * (world - 1) / world * ar_bytes / (ar_s * job.grad_accumulation) / GB
            if ar_s > 0 else (hw.intra_gbs if nodes == 1 else hw.inter_gbs))
    comm = Comm(allreduce_seconds_per_step=ar_s, alltoall_seconds_per_step=a2a_s,
                bandwidth_gbps_used=used, intra_node_gbps=hw.intra_gbs,
                inter_node_gbps=hw.inter_gbs)
    return step, comm, world * job.batch_size / total
