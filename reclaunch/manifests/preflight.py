"""NCCL preflight: an all_reduce bandwidth job and a verdict on its output.

The job runs before training on the same image, nodes and fabric profile, with
NCCL_DEBUG=INFO, so the log shows both the bus bandwidth and the transport NCCL really used.
The worst silent failure it catches is NCCL falling back to TCP sockets on an RDMA fabric.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from reclaunch.errors import PlanError
from reclaunch.fabric import FabricProfile, ld_library_export, nccl_env, pod_requirements
# The parsers of nccl-tests output and NCCL INFO logs live with the fabric facts they read
# (reclaunch/fabric/nccl_logs.py); diagnose reads the same lines. Re-exported for the verdict.
from reclaunch.fabric.nccl_logs import (NcclDebug, NcclLogError, NcclTestResult,  # noqa: F401
                                        NcclTestRow, parse_nccl_debug, parse_nccl_tests)
from reclaunch.tags import CLUSTER_TAG, MANAGED_TAG, PYTORCHJOB_API

# Why not the nccl-tests binary: all_reduce_perf bootstraps its ranks through MPI (or a PMI
# launcher such as srun); a PyTorchJob gives torchrun's PET_* variables (PET_NNODES,
# PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR/PORT) and no MPI or ssh. So every pod runs
# `torchrun --no-python python3 -c <this script>`: torchrun reads the PET_* defaults, starts one
# rank per GPU and NCCL bootstraps through torch.distributed's TCPStore. The script runs the
# same sweep as `all_reduce_perf -b 8 -e 8G -f 2 -g 1` and prints the nccl-tests table format
# (in-place columns; torch's all_reduce is in-place, so out-of-place reads N/A). It also tests
# the exact NCCL and net plugin the training image will use. CPU-only pods fall back to gloo.
# The timed loop's iteration count is one number for all ranks: each rank times one probe
# all_reduce, and the MAX of those probes (itself an all_reduce every rank issues) sets the
# count. A count from each rank's own clock gives ranks different numbers of collectives:
# gloo stops with a collective mismatch, NCCL hangs until its watchdog. nccl-tests gets the
# same guarantee from a fixed `-n` (src/common.cu: every rank runs `iters` of each size).
ALLREDUCE_SCRIPT = r'''
import os, socket, sys, time
import torch, torch.distributed as dist
def nbytes(s):
    s = s.upper().rstrip("B"); k = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(s[:-1]) * k[s[-1]]) if s[-1] in k else int(s)
a = dict(zip(sys.argv[1::2], sys.argv[2::2]))
lo, hi, f = nbytes(a.get("-b", "8")), nbytes(a.get("-e", "8G")), int(a.get("-f", "2"))
coll = a.get("-c", "all_reduce")
cuda = torch.cuda.is_available()
lr = int(os.environ.get("LOCAL_RANK", "0"))
if cuda:
    torch.cuda.set_device(lr)
dev = torch.device("cuda", lr) if cuda else torch.device("cpu")
dist.init_process_group("nccl" if cuda else "gloo")
r, n = dist.get_rank(), dist.get_world_size()
sync = torch.cuda.synchronize if cuda else (lambda: None)
def say(*x):
    if r == 0:
        print(*x, flush=True)
say(f"# Collective test starting: {coll}_perf")
say(f"# nThread 1 nGpus 1 minBytes {lo} maxBytes {hi} step: {f}(factor) warmup iters: 1 "
    f"iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices")
me = (r, os.getpid(), socket.gethostname(), lr, torch.cuda.get_device_name(lr) if cuda else "cpu")
everyone = [None] * n
dist.all_gather_object(everyone, me)
for rk, pid, host, d, name in everyone:
    say(f"#  Rank {rk:2d} Group  0 Pid {pid:6d} on {host:>10} device {d:2d} [0x00] {name}")
say("#\n#" + " " * 58 + "out-of-place" + " " * 23 + "in-place")
say("#       size         count      type   redop    root     time   algbw   busbw #wrong"
    "     time   algbw   busbw #wrong")
say("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       "
    "     (us)  (GB/s)  (GB/s)       ")
buf = torch.empty(max(hi // 4, n), dtype=torch.float32, device=dev)
gather = coll == "all_gather"
bus_all, bad_all, s = [], 0, lo
while s <= hi:
    c = max(s // 4 // n, 1) * n if gather else max(s // 4, 1); v = buf[:c]
    if gather:   # nccl-tests all_gather: size = the gathered buffer, each rank sends 1/n
        part = v[r * (c // n):(r + 1) * (c // n)].clone().fill_(float(r))
        op = lambda: dist.all_gather_into_tensor(v, part)
        op(); sync()
        want = torch.arange(n, dtype=v.dtype, device=dev).repeat_interleave(c // n)
        bad = int((v != want).sum().item())
    else:
        op = lambda: dist.all_reduce(v)
        v.fill_(1.0); op(); sync()
        bad = int((v != n).sum().item())
    t0 = time.perf_counter(); op(); sync()
    probe = torch.tensor([time.perf_counter() - t0], dtype=torch.float64, device=dev)
    dist.all_reduce(probe, op=dist.ReduceOp.MAX)
    iters = max(1, min(20, int(0.5 / max(probe.item(), 1e-6))))
    dist.barrier(); sync(); t0 = time.perf_counter()
    for _ in range(iters):
        op()
    sync()
    agg = torch.tensor([(time.perf_counter() - t0) / iters, bad], dtype=torch.float64, device=dev)
    dist.all_reduce(agg, op=dist.ReduceOp.MAX)
    t, bad = agg[0].item(), int(agg[1].item())
    # nccl-tests doc/PERFORMANCE.md: busbw = algbw x 2(n-1)/n (all_reduce), (n-1)/n (all_gather)
    alg = c * 4 / t / 1e9; bus = alg * (1 if gather else 2) * (n - 1) / n
    bus_all.append(bus); bad_all += bad
    say(f"{c * 4:12d}  {c:12d}     float  {'none' if gather else 'sum':>6}      -1      N/A"
        f"     N/A     N/A     N/A  {t * 1e6:7.1f}  {alg:6.2f}  {bus:6.2f}  {bad:5d}")
    s *= f
say(f"# Out of bounds values : {bad_all} {'OK' if bad_all == 0 else 'FAILED'}")
say(f"# Avg bus bandwidth    : {sum(bus_all) / max(len(bus_all), 1):.4f}\n#")
dist.destroy_process_group()
sys.exit(1 if bad_all else 0)
'''


def nccl_tests_job(name: str, namespace: str, image: str, nodes: int, gpus_per_node: int,
                   profile: FabricProfile, *, cluster_name: str | None = None,
                   user_env: dict[str, str] | None = None, min_bytes: str = "8",
                   max_bytes: str = "8G", factor: int = 2, labels: dict[str, str] | None = None,
                   node_selector: dict[str, str] | None = None,
                   tolerations: list[dict] | None = None, affinity: dict | None = None,
                   rxdm_image: str | None = None, memory_gib_per_gpu: int = 4,
                   active_deadline_seconds: int = 1800,
                   template: Callable[[dict], dict] | None = None) -> dict:
    """A kubeflow.org/v1 PyTorchJob running the all_reduce sweep on every GPU of every node.

    Requests one CPU and `memory_gib_per_gpu` GiB per rank: besides sizing the pod, a container that
    requests hugepages (EFA) must request cpu or memory too, or the API server rejects it
    (core validation: "HugePages require cpu or memory").
    `template(container)` builds the pod around the container: `render.preflight_job` passes the
    training job's own pod template, so both land on the same nodes with the same fabric setup.
    """
    if profile.fabric == "gloo":
        raise PlanError("the NCCL preflight needs GPUs; the local profile uses gloo on CPUs")
    if nodes < 1 or gpus_per_node < 1:
        raise PlanError(f"preflight needs >= 1 node and GPU, got {nodes} x {gpus_per_node}")
    cluster = cluster_name or name
    req = pod_requirements(profile, cluster, gpus_per_node, rxdm_image=rxdm_image)
    env = {**req.env, **nccl_env(profile, user_env, debug="INFO"),
           "RECLAUNCH_ALLREDUCE_PY": ALLREDUCE_SCRIPT}
    launch = (f'torchrun --no-python python3 -c "$RECLAUNCH_ALLREDUCE_PY" '
              f"-b {min_bytes} -e {max_bytes} -f {factor} -c {profile.threshold_collective}")
    if req.exit_file:   # a non-native sidecar waits for this file before it exits
        launch += f"; rc=$?; touch {req.exit_file}; exit $rc"
    if req.ld_library_path:
        launch = f"{ld_library_export(req.ld_library_path)}\n{launch}"
    gib = memory_gib_per_gpu * gpus_per_node
    memory = {"memory": f"{gib}Gi"}
    container: dict = {
        "name": "pytorch", "image": image, "command": ["bash", "-c", launch],
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "resources": {"requests": {**req.resources, "cpu": str(gpus_per_node), **memory},
                      "limits": {**req.resources, **memory}},
        "volumeMounts": [*req.volume_mounts, {"name": "dshm", "mountPath": "/dev/shm"}],
    }
    meta_labels = {CLUSTER_TAG: cluster, MANAGED_TAG: "true",
                   "reclaunch-role": "preflight", **(labels or {})}
    if template is not None:
        tpl = template(container)
        pod_spec = {**tpl["spec"], "restartPolicy": "Never"}
        meta_labels = {**tpl["metadata"]["labels"], **meta_labels}
        annotations = dict(tpl["metadata"].get("annotations") or {})
    else:   # standalone (no plan): the same parts, assembled here
        if req.capabilities:
            container["securityContext"] = {"capabilities": {"add": list(req.capabilities)}}
        pod_spec = {
            "containers": [container, *req.sidecars],
            "volumes": [*req.volumes,
                        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": req.shm_size}}],
            "restartPolicy": "Never",
        }
        if req.init_containers:
            pod_spec["initContainers"] = req.init_containers
        if node_selector:
            pod_spec["nodeSelector"] = dict(node_selector)
        if tolerations:
            pod_spec["tolerations"] = list(tolerations)
        if affinity:
            pod_spec["affinity"] = affinity
        annotations = dict(req.annotations)

    def replica(count: int) -> dict:
        meta = {"labels": dict(meta_labels), **({"annotations": annotations} if annotations else {})}
        return {"replicas": count, "restartPolicy": "Never",
                "template": {"metadata": meta,
                             "spec": pod_spec}}

    specs = {"Master": replica(1)}
    if nodes > 1:
        specs["Worker"] = replica(nodes - 1)
    return {
        "apiVersion": PYTORCHJOB_API, "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(meta_labels)},
        "spec": {
            "nprocPerNode": str(gpus_per_node),
            "runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 0,
                          "ttlSecondsAfterFinished": 3600,
                          "activeDeadlineSeconds": active_deadline_seconds},
            "pytorchReplicaSpecs": specs,
        },
    }


def _nbytes(text: str) -> int:
    """The script's (and nccl-tests') size syntax: 8, 64K, 8G in powers of two."""
    t = str(text).upper().rstrip("B")
    k = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(t[:-1]) * k[t[-1]]) if t[-1] in k else int(t)


def sweep_problems(result: NcclTestResult, *, min_bytes: str = "8", max_bytes: str = "8G",
                   factor: int = 2) -> list[str]:
    """Why a parsed log is not a complete run of the sweep the job asked for ([] = it is):
    a rank that died mid-sweep leaves a table that ends early and no summary line."""
    lo, hi = max(_nbytes(min_bytes), 1), _nbytes(max_bytes)
    want, s = 0, lo
    while s <= hi:
        want, s = want + 1, s * factor
    out = []
    if len(result.rows) < want or result.largest.size < hi // factor:
        out.append(f"the sweep stopped early: {len(result.rows)} of {want} sizes, largest "
                   f"{result.largest.size} B of {hi} B")
    if result.avg_busbw is None:
        out.append("no '# Avg bus bandwidth' line: the run did not finish")
    return out


def threshold_for(profile: FabricProfile, nodes: int) -> float:
    """The busbw floor for a run on `nodes` nodes (the table's is for 2 nodes)."""
    if nodes <= 1:
        return round(0.8 * profile.intra_node_busbw_gbs, 1)
    if nodes == 2:
        return profile.busbw_threshold_gbs
    # >= 3 nodes: 2-node figures can beat the link rate; at scale the link is the ceiling.
    return round(min(profile.busbw_threshold_gbs, 0.8 * profile.inter_node_busbw_gbs), 1)


@dataclass(frozen=True)
class Verdict:
    ok: bool
    busbw: float
    threshold: float
    transport: str | None
    cause: str | None = None
    fix: str | None = None
    notes: tuple[str, ...] = ()


def verdict(result: NcclTestResult, transports: NcclDebug | None, profile: FabricProfile,
            nodes: int) -> Verdict:
    busbw, thr = result.busbw, threshold_for(profile, nodes)
    used = transports.primary if transports else None
    causes: list[str] = []
    fixes: list[str] = []
    notes: list[str] = []
    expected = profile.transport
    if nodes > 1 and expected and used and used != expected:
        why = (f"NCCL used {used}, not {expected}: it fell back from {profile.fabric} "
               f"to {'TCP sockets' if used == 'NET/Socket' else used}")
        if transports and transports.plugin_missing:
            why += " (the NCCL net plugin was not found in the image)"
        causes.append(why)
        fixes.append(profile.fallback_fix or "set interconnect.inter_node to the instance's fabric")
    elif (nodes > 1 and expected == "NET/OFI" and transports and transports.ofi_provider
          and transports.ofi_provider != "efa"):
        causes.append(f"libfabric selected provider {transports.ofi_provider!r}, not efa: "
                      "the pod has no EFA device, so traffic goes over TCP")
        fixes.append(profile.fallback_fix)
    elif nodes > 1 and expected and used is None:
        notes.append("no NET/ transport line in the log: run with nccl.debug: INFO "
                     "(NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,NET) to see the transport")
    if transports and transports.no_socket_iface:
        causes.append("NCCL found no usable socket interface for bootstrap")
        fixes.append("set NCCL_SOCKET_IFNAME in nccl.env to the pod's interface (e.g. eth0; "
                     "'^lo,docker' excludes, '=' matches exactly)")
    if result.wrong:
        causes.append(f"{result.wrong} wrong values: all_reduce returned corrupt data")
        fixes.append("update NCCL (2.18.1 + relaxed ordering + LL128 corrupts data on HGX H100: "
                     "use >= 2.18.3 or NCCL_PROTO=^LL128) and check GPU ECC errors "
                     "(nvidia-smi -q -d ECC)")
    if thr > 0 and busbw < thr:
        size = result.largest.size
        human = f"{size / (1 << 30):g} GiB" if size >= 1 << 30 else f"{size / (1 << 20):g} MiB"
        causes.append(f"busbw {busbw:.1f} GB/s at {human} is under the "
                      f"{thr:.1f} GB/s threshold ({profile.threshold_basis})")
        if not fixes:   # a fallback already explains low bandwidth
            fix = profile.low_busbw_fix
            sock_env = profile.env.get("NCCL_SOCKET_IFNAME", "")
            if transports and transports.socket_ifaces and sock_env and not sock_env.startswith(
                    "^") and not any(i.startswith(sock_env.lstrip("=")) for i in
                                     transports.socket_ifaces):
                fix += (f"; NCCL used socket interface(s) {', '.join(transports.socket_ifaces)} "
                        f"but the profile expects {sock_env}: check NCCL_SOCKET_IFNAME")
            fixes.append(fix)
    if (nodes > 1 and profile.gpudirect and transports and used == expected
            and transports.gdr is False):
        lines, total = transports.gdr_channels
        causes.append(f"NCCL used {used} without GPUDirect RDMA: {lines} of {total} "
                      f"`via {used}` channel lines end in /GDRDMA, so every transfer is staged "
                      "through host memory")
        fixes.append(profile.gdr_fix or profile.low_busbw_fix)
    if thr > 0 and profile.measured_2node_busbw_gbs is None:   # p5en, ND H100 v5, ...
        notes.append(f"the {thr:.1f} GB/s threshold is derived, not measured on this fabric "
                     f"({profile.threshold_basis}): a result near it says little either way")
    if nodes <= 1:
        notes.append(f"single node: this measured NVLink/PCIe between the node's GPUs only; "
                     f"the {profile.fabric} network between nodes was not tested")
    if nodes == 2:
        notes.append("2-node results can exceed the link rate (Tree): calibrate with >= 4 nodes")
    if result.largest.size < 1 << 30:
        notes.append("largest size is under 1 GiB: busbw is latency-bound; sweep to -e 8G")
    return Verdict(ok=not causes, busbw=busbw, threshold=thr, transport=used,
                   cause="; ".join(causes) or None, fix="; ".join(f for f in fixes if f) or None,
                   notes=tuple(notes))
