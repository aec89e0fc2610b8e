"""Step time: the dense part by GEMM shape, kernel launches, collectives with latency; the
embedding part (lookups vs HBM, all-to-all) comes per rank from sharding.py / shard_cost.py.

Per step on one GPU (constants: data/planner.yaml perf, each sourced and dated; the few free ones
fitted to data/calibration.yaml by reclaunch/planner/fit.py):
    device     what the GPU runs, one stream after the other:
      GEMMs      per layer max(2mkn/(peak x gemm_efficiency), bytes moved / HBM), x3 for backward
      elementwise  activations x passes / HBM (bias, activation, their gradients)
      embeddings + all-to-all (shard_cost.py), overlapped with the dense part under
                 job.embedding_overlap: full (the longer path counts), else added to it
      all-reduce   alpha(world) + ring bytes (gradient dtype) / busbw, hierarchical across nodes,
                 what dense backward does not hide
    host       what the CPU issues: kernel launches x per-launch cost of the stack's execution
               (eager: the framework's per-op dispatch; cuda_graph: one graph replay) + the
               per-step host work (optimizer step call, loss, pipeline bookkeeping) + TorchRec's
               per-feature Python + the batch the training thread builds when the job has no
               loader workers (job.num_workers: 0; with workers it leaves the step). Launches
               are counted the way the stack issues them: dense layers, the fixed per-step
               kernels, and one kernel group per embedding sharding group (fused TBE kernels,
               spec/stacks.py) or one per table (per-feature framework ops).
    step       max(device, host): the CPU runs ahead of the GPU until it is the slower one
    input      samples/s <= host vCPUs x input_gbs_per_vcpu / bytes per sample
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from reclaunch.planner.constants import constants
from reclaunch.planner.model import Comm, StepTime

GB = 1e9


def _p() -> dict:
    return constants()["perf"]


def collective_latency_seconds(device: str, world: int, nodes: int) -> float:
    """Small-message latency of one collective: a base inside a node, plus a step per doubling
    of the nodes (NCCL's tree / hierarchical algorithms are log-depth across nodes)."""
    if world <= 1:
        return 0.0
    lat = _p()["collective_latency"][device]
    return lat["base_seconds"] + lat["per_node_doubling_seconds"] * math.log2(max(nodes, 1))


def allreduce_seconds(nbytes: float, n: int, busbw_gbs: float) -> float:
    """Ring all-reduce: 2(n-1)/n x bytes / effective bus bandwidth (GB/s)."""
    if n <= 1 or nbytes <= 0:
        return 0.0
    return 2.0 * (n - 1) / n * nbytes / (busbw_gbs * GB)


def hierarchical_allreduce_seconds(nbytes: float, gpus_per_node: int, nodes: int,
                                   intra_gbs: float, inter_gbs: float) -> float:
    """Intra-node ring over NVLink, then across nodes over the fabric (NCCL's tree/ring split).
    The inter-node busbw is per node (nccl-tests busbw), so each GPU's 1/G share cancels."""
    if nbytes <= 0 or gpus_per_node * nodes <= 1:
        return 0.0
    return (allreduce_seconds(nbytes, gpus_per_node, intra_gbs)
            + allreduce_seconds(nbytes, nodes, inter_gbs)
            + collective_latency_seconds("cuda", gpus_per_node * nodes, nodes))


def embedding_inter_gbs(hw) -> float:
    """The inter-node figure the embedding exchange gets: the fabric's on NVIDIA's SuperPOD
    reference systems, a fitted fraction of it on any other fabric (every cloud instance):
    planner.yaml perf.inter_node_efficiency_off_reference."""
    return hw.inter_gbs * (1.0 if hw.reference_fabric else float(_p()["inter_node_efficiency_off_reference"]))


def off_reference_warning(hw, nodes: int) -> str | None:
    """Several nodes on a fabric other than NVIDIA's SuperPOD (every cloud instance): the model's
    cross-node figures come mostly from SuperPOD rows, and the first extra node of non-NVIDIA
    systems ran well below them (planner review 2026-12-03, defect 5)."""
    if nodes <= 1 or hw.reference_fabric or hw.device == "cpu":
        return None
    return ("across nodes off NVIDIA's DGX SuperPOD fabric: non-NVIDIA multi-node MLPerf DCNv2 runs "
            "(v3.1 Dell 2x4, v5.0 HPE 2x8 and 4x8, v5.1 Dell 2x8) did 1.5-2.1x less than this model "
            "plans for them; expect the lower part of the range")


def dim_penalty(dim: int) -> float:
    for p in constants()["perf"]["dim_penalty"]:
        if dim < p["below"]:
            return float(p["factor"])
    return 1.0


# eq/repr off: none compares or prints these (issue 25: fewer methods to create at import)
@dataclass(eq=False, repr=False)
class Hardware:
    """What one GPU (or CPU process for cloud: local) can do."""

    hbm_gbs: float            # achieved gather bandwidth, GB/s
    peak_tflops: float        # at the job's precision
    utilisation: float
    intra_gbs: float          # effective all-reduce busbw inside a node
    inter_gbs: float          # effective all-reduce busbw across nodes (per node)
    device: str = "cuda"      # which sharding types can run (planner.yaml sharding.supported)
    stream_gbs: float = 0.0   # elementwise bandwidth (dense optimizer); 0 = hbm_gbs
    host_vcpus: int = 0       # per node, for the input-pipeline ceiling; 0 = unknown
    reference_fabric: bool = False   # NVIDIA's DGX SuperPOD (catalog Offer.reference_fabric)

    @property
    def stream(self) -> float:
        return self.stream_gbs or self.hbm_gbs


def _act_bytes(precision: str) -> int:
    return 2 if precision in ("fp16", "bf16") else 4


def dense_seconds(spec, hw: Hardware, dense) -> tuple[float, float]:
    """(dense forward + backward seconds, of which backward) per step on one GPU: GEMMs by
    shape (roofline of peak x gemm_efficiency and HBM traffic), the rest of the FLOPs (interaction)
    at the same efficiency and elementwise passes over the activations. Launches are host work
    (host_seconds)."""
    c = _p()
    b = float(spec.job.batch_size)
    mult = 1.0 + c["dense_backward_multiplier"]
    if hw.device == "cpu":   # cloud: local keeps its one CPU constant (planner.yaml local)
        s = dense.flops_fwd * mult * b / (hw.peak_tflops * 1e12 * hw.utilisation)
        return s, s * c["dense_backward_multiplier"] / mult
    ab = _act_bytes(spec.job.precision)
    # Half precision doubles the tensor-core peak but not the end-to-end GEMM rate (autocast
    # casts, loss scaling, smaller tiles per byte moved): its own factor, fitted.
    peak = hw.peak_tflops * 1e12 * c["gemm_efficiency"] * (c["gemm_half_precision_factor"] if ab == 2 else 1.0)
    hbm = hw.stream * 1e9
    gemm_s, gemm_flops = 0.0, 0.0
    for k, n, per in dense.gemms:
        m = b * per
        flops = 2.0 * m * k * n
        gemm_flops += flops
        moved = (m * k + k * n + m * n) * ab
        gemm_s += mult * max(flops / peak, moved / hbm)
    rest = max(dense.flops_fwd * b - gemm_flops, 0.0) * mult / peak
    elementwise = dense.act_width * b * ab * c["elementwise_passes"] / hbm
    compute = gemm_s + rest + elementwise
    return compute, compute * c["dense_backward_multiplier"] / mult


class Host(NamedTuple):
    """What the CPU issues per step: base_s whatever the sharding, per_group_s per embedding
    kernel group (fused stacks; 0 for per-table stacks, whose launches are in base_s); `parts`
    names what base_s is made of (the plan says what sets a host-bound step)."""

    base_s: float
    per_group_s: float
    overlaps_device: bool     # a GPU runs while the CPU issues; a CPU process does both in turn
    parts: tuple[tuple[str, float], ...] = ()

    def seconds(self, groups: int) -> float:
        return self.base_s + self.per_group_s * groups


def host_work(spec, device: str, dense_layers: int) -> Host:
    """Host seconds per step of the job's stack (spec/stacks.py): launches x the per-launch
    cost of its execution mode, the stack's fixed per-step work, TorchRec's per-feature work,
    and the batch the training thread builds itself when it has no loader workers."""
    from reclaunch.spec.stacks import assumed

    if device == "cpu":   # cloud: local: one process computes and dispatches, in turn
        return Host(float(_cpu()["step_overhead_seconds"]), 0.0, False)
    c = _p()
    st = assumed(spec.job)
    per = float(c["kernel_launch_seconds"][spec.job.execution])
    k = c["kernels"]
    launches = (k["per_step"] + dense_layers * k["per_dense_layer"]) * per
    if st.embedding_kernels == "per_table":
        launches += len(spec.model.tables) * k["per_table"] * per
    parts = [("kernel launches", launches),
             (f"{st.pipeline if st.pipeline == 'torchrec' else spec.job.execution} per-step work",
              step_overhead_seconds(device, spec.job.execution, st.pipeline)),
             ("per-feature host work", per_feature_seconds(spec, st.pipeline)),
             ("batches built on the training thread", in_thread_input_seconds(spec))]
    parts = [(n, v) for n, v in parts if v > 0]
    base = sum(v for _, v in parts)
    group = 0.0 if st.embedding_kernels == "per_table" else k["per_embedding_group"] * per
    return Host(base, group, True, tuple(parts))


def host_bound_warning(spec, step, host: Host, groups: int) -> str | None:
    """When the CPU side sets the step: what it is made of and how sure that is (the fitted
    parts rest on few published rows: planner review 2026-12-03, defect 1)."""
    from reclaunch.spec.stacks import assumed

    if not host.overlaps_device or step.total_seconds <= 0 or host.seconds(groups) < 0.999 * step.total_seconds:
        return None
    parts = list(host.parts) + ([("per embedding group", host.per_group_s * groups)] if host.per_group_s else [])
    what = ", ".join(f"{n} {v * 1e3:.2f} ms" for n, v in sorted(parts, key=lambda x: -x[1]))
    sure = ("TorchRec's per-step work and the training thread's batch rate are fitted on one "
            "source (the torchrec_dlrm example, two README revisions that disagree ~2x): a measured "
            "run of this shape says more" if assumed(spec.job).pipeline == "torchrec" or spec.job.num_workers == 0
            else "launch costs are physical figures, not fitted")
    tip = "; job.num_workers > 0 takes the batch building off the step" if spec.job.num_workers == 0 else ""
    return (f"host-bound: the CPU sets the step ({step.total_seconds * 1e3:.2f} ms: {what}); a faster "
            f"GPU will not run it faster. {sure}{tip}")


def per_feature_seconds(spec, pipeline: str) -> float:
    """TorchRec's Python per feature and step: the pooled KeyedTensor split per key
    (to_dict) and the model's per-feature gather of it, the input dist's per-key lengths,
    each a dispatcher call (torchrec/models/dlrm.py SparseArch.forward); priced at the eager
    per-op cost whatever the execution (it runs outside any captured graph)."""
    if pipeline != "torchrec":
        return 0.0
    c = _p()
    return len(spec.model.tables) * c["host_ops_per_feature"] * float(c["kernel_launch_seconds"]["eager"])


def in_thread_input_seconds(spec) -> float:
    """`job.num_workers: 0`: the training process builds every batch itself, between steps, on
    its own thread (perf.in_thread_input_gbs, fitted: slicing, KJT construction and the pinned
    copy in Python), instead of loader workers doing it beside the step."""
    if spec.job.num_workers != 0:
        return 0.0
    from reclaunch.planner.memory import input_bytes_per_sample

    per_sample = input_bytes_per_sample(spec.model) + 4     # + the label
    return spec.job.batch_size * per_sample / (_p()["in_thread_input_gbs"] * 1e9)


def _cpu() -> dict:
    """The CPU-process constants: planner.yaml's section for the target that runs here."""
    from reclaunch import clouds

    return constants()[clouds.here().name]


def step_overhead_seconds(device: str, execution: str = "eager", pipeline: str = "plain") -> float:
    """Per-step host work besides launches: TorchRec's train pipeline whatever the execution
    (its Python runs outside any captured graph), else the execution mode's."""
    if device == "cpu":
        return float(_cpu()["step_overhead_seconds"])
    key = "torchrec" if pipeline == "torchrec" else execution
    return float(_p()["step_overhead_seconds"][key])


def input_ceiling(spec, hw: Hardware, nodes: int) -> float | None:
    """Samples/s the hosts' data loaders can parse and copy (None: unknown host)."""
    from reclaunch.planner.memory import input_bytes_per_sample

    if hw.device == "cpu" or hw.host_vcpus <= 0:
        return None
    per_sample = input_bytes_per_sample(spec.model) + 4     # + the label
    return nodes * hw.host_vcpus * _p()["input_gbs_per_vcpu"] * 1e9 / per_sample


def embedding_path(emb_s: float, a2a_s: float, dense_s: float, overlap: str) -> tuple[float, float]:
    """(seconds of embeddings + all-to-all + dense compute on the critical path, the all-to-all
    part of them). input: one after the other. full: the lookups and their all-to-all on their
    own streams beside the dense compute (HugeCTR train_intra/inter_iteration_overlap), so the
    longer of the two paths counts: an ideal overlap (they share the GPU; the fit carries the rest)."""
    if overlap != "full":
        return emb_s + a2a_s + dense_s, a2a_s
    sparse = emb_s + a2a_s
    return max(sparse, dense_s), min(a2a_s, max(0.0, sparse - dense_s))


def overlap_warning(spec) -> str | None:
    """embedding_overlap: full describes the user's own stack; the reference trainer runs
    TorchRec's TrainPipelineSparseDist (input), so a plan for it would be optimistic."""
    if spec.job.embedding_overlap != "full":
        return None
    if not any(str(w).replace("\\", "/").endswith("trainer/train.py") for w in spec.job.command):
        return None
    return (f"job.embedding_overlap: full ({spec.where('job', 'embedding_overlap')}), but the reference trainer "
            "(examples/trainer/train.py) overlaps only the input all-to-all: the step is modelled "
            "shorter than it will run")


def step_time(spec, hw: Hardware, ev, dense_s: float, dense_ar_bytes: float, nodes: int,
              gpus_per_node: int, host: Host):
    """(StepTime, Comm, samples/s for the cluster) of the sharding evaluation `ev`
    (reclaunch.planner.sharding.Eval: the slowest rank's embedding work, the all-reduce)."""
    job = spec.job
    world = nodes * gpus_per_node
    crit = ev.critical
    emb_s, a2a_s = ev.comp[crit], ev.comm[crit] + ev.latency_s
    ar_s = ev.ar_s
    path, a2a_exposed = embedding_path(emb_s, a2a_s, dense_s, job.embedding_overlap)
    exposed = ev.exposed_ar_s + a2a_exposed
    total = ev.total       # max(device, host) as sharding.StepCtx.step rated it
    ceiling = input_ceiling(spec, hw, nodes)
    if ceiling is not None:
        total = max(total, world * job.batch_size / ceiling)
    step = StepTime(embedding_seconds=emb_s, dense_compute_seconds=dense_s,
                    allreduce_seconds=ar_s, alltoall_seconds=a2a_s,
                    exposed_comm_seconds=exposed, total_seconds=total,
                    host_seconds=host.seconds(ev.groups))
    ar_bytes = dense_ar_bytes + ev.dp_bytes
    used = (2.0 * (world - 1) / world * ar_bytes / (ar_s * job.grad_accumulation) / GB
            if ar_s > 0 else (hw.intra_gbs if nodes == 1 else hw.inter_gbs))
    comm = Comm(allreduce_seconds_per_step=ar_s, alltoall_seconds_per_step=a2a_s,
                bandwidth_gbps_used=used, intra_node_gbps=hw.intra_gbs,
                inter_node_gbps=hw.inter_gbs)
    return step, comm, world * job.batch_size / total
