"""make_plan: Spec (+ catalog offer, node count) -> Plan. Pure and offline."""

from __future__ import annotations

from reclaunch import clouds, host
from reclaunch.errors import PlanError, SpecError  # noqa: F401
from reclaunch.planner import cost as costmod
from reclaunch.planner import uncertainty
from reclaunch.planner.constants import constants, dtype_bytes
from reclaunch.planner.evidence import gather
from reclaunch.planner.memory import GIB, assemble, fixed_part
from reclaunch.planner.model import Plan
from reclaunch.planner import stack_view
from reclaunch.planner.perf import (Hardware, dense_seconds, embedding_inter_gbs, host_bound_warning,
                                   host_work, off_reference_warning, overlap_warning,
                                   step_overhead_seconds, step_time)
from reclaunch.planner.shard_plan import plan_sharding
from reclaunch.spec.buckets import is_url
from reclaunch.spec.stacks import assumed


def candidate_offers(spec, catalog):
    """Offers matching spec.cloud/gpu/gpus_per_node/region; SpecError (exit 2) naming what exists."""
    from reclaunch.catalog import offers
    from reclaunch.spec import normalize_gpu

    gpu = None
    if spec.gpu:
        got = normalize_gpu(spec.gpu, sorted(catalog.gpus))
        gpu = got if isinstance(got, str) else spec.gpu
    rows = offers(catalog, cloud=spec.cloud, gpu=gpu, instance_type=spec.instance_type)
    rows = [o for o in rows if o.gpu_count == spec.gpus_per_node]
    link = spec.interconnect.intra_node
    if link is not None:   # the GPUs' link the spec asks for: only instances that have it
        rows = [o for o in rows if o.intra_node == link or o.gpu_count == 1]
    if not rows:
        what = spec.instance_type or f"{spec.gpus_per_node} x {gpu or 'GPU'}"
        if link is not None:
            what += f" with intra_node {link}"
        # The spec asks for what the catalog lacks: bad input (exit 2), like validate says.
        raise SpecError(f"{spec.where('instance_type' if spec.instance_type else 'gpu')}: no "
                        f"{spec.cloud} offer in the catalog for {what} (`reclaunch catalog` "
                        "lists what exists)")
    if spec.region:
        here = [o for o in rows if o.region == spec.region]
        if not here:
            known = sorted({o.region for o in rows})
            raise SpecError(
                f"{spec.where('region')}: region: no catalog row for {rows[0].instance_type if spec.instance_type else 'a matching instance'} "
                f"in {spec.region}; regions that sell it: {', '.join(known)} (`reclaunch catalog "
                "refresh` re-prices only the rows the catalog already has)")
        rows = here
    return rows


def _hardware(spec, offer, catalog, warnings: list[str]) -> tuple[Hardware, str, dict, int, float | None]:
    """(Hardware, fabric name, nccl env, capacity bytes per GPU, gpu_memory_gib)."""
    c = constants()
    perf = c["perf"]
    if offer is None:  # cloud: local — CPU processes over gloo, clearly rough constants
        loc = c[clouds.here().name]   # planner.yaml's section for the target that runs here
        world = spec.nodes * spec.gpus_per_node
        cap = host.ram_bytes() // max(world, 1)
        hw = Hardware(hbm_gbs=loc["memory_gbs_per_process"], peak_tflops=loc["cpu_gflops_per_process"] / 1e3,
                      utilisation=loc["dense_utilisation"], intra_gbs=loc["gloo_gbs"], inter_gbs=loc["gloo_gbs"],
                      device=loc["device"], stream_gbs=loc["stream_gbs_per_process"])
        return hw, loc["fabric"], {}, cap, None
    gpu = catalog.gpu(offer.gpu)
    fabric, env, intra, inter = _fabric(spec, offer, catalog, warnings)
    hw = Hardware(hbm_gbs=gpu.hbm_tbps * 1e3 * perf["hbm_efficiency"],
                  peak_tflops=gpu.peak_tflops(spec.job.precision),
                  utilisation=perf["gemm_efficiency"], intra_gbs=intra, inter_gbs=inter,
                  host_vcpus=offer.vcpus, reference_fabric=offer.reference_fabric)
    return hw, fabric, env, int(offer.gpu_memory_gib * GIB), offer.gpu_memory_gib


def _fabric(spec, offer, catalog, warnings):
    from reclaunch import fabric as fab
    from reclaunch.fabric.inter import of_offer as of_nic

    prof = fab.profile_for(offer.cloud, offer.instance_type, _inter_node(spec, offer), catalog)
    if prof.warning:
        warnings.append(prof.warning)
    env = fab.nccl_env(prof, spec.nccl.env, debug=spec.nccl.debug)
    # The offer's own NIC caps the figure (fabric/inter.py; the same row as profile_for read,
    # unless the calibration harness states a published node's network)
    inter = of_nic(float(prof.inter_node_busbw_gbs), offer).busbw_gbs
    return prof.name, env, float(prof.intra_node_busbw_gbs), inter


def _inter_node(spec, offer) -> str:
    """The spec's inter_node where it applies to this offer (compare crosses clouds)."""
    want = spec.interconnect.inter_node
    return want if want in ("auto", "ethernet", offer.fabric) else "auto"


def make_plan(spec, catalog=None, offer=None, nodes: int | None = None, *, context=None) -> Plan:
    """The plan for `spec` (optionally on a given catalog `offer` and node count). `context`
    (planner.measured.PlanContext): measured runs, this host's calibration, preflight."""
    from reclaunch.catalog import load_catalog

    cat = catalog if catalog is not None else load_catalog()

    def again(spec, catalog, offer=None, nodes=None):   # a re-size keeps the evidence
        return make_plan(spec, catalog, offer, nodes, context=context)

    if not spec.runs_here and offer is None:
        from reclaunch.planner import sizing   # across 1-, 2-, 4- and 8-GPU sizes

        rows = sizing.candidates(spec, cat, candidate_offers)
        if len(rows) == 1 or spec.instance_type:
            offer = rows[0]
        else:
            plans = [sizing.sized(spec, cat, make_plan(spec, cat, o, nodes, context=context), nodes, again)
                     for o in rows]
            best = _cheapest(plans, spec.spot.enabled)
            best.pick_reason = sizing.why(best, plans, spec.spot.enabled)
            return best
        return sizing.sized(spec, cat, _build(spec, cat, offer, nodes or spec.nodes, context), nodes, again)
    return _build(spec, cat, offer, nodes or spec.nodes, context)


def _cheapest(plans: list[Plan], spot: bool) -> Plan:
    def key(p: Plan):
        usd = costmod.headline_usd(p.cost, spot)
        return (not p.memory.fits, usd is None, usd or 0.0)
    best = min(plans, key=key)
    best.picked_from = [p.instance_type for p in plans]
    return best


def _inputs(spec, cat, offer, warnings):
    """What the sharding search and the step need: hardware, fixed memory, dense step."""
    gpn = offer.gpu_count if offer is not None else spec.gpus_per_node
    hw, fabric, env, cap, gpu_gib = _hardware(spec, offer, cat, warnings)
    fixed = fixed_part(spec, cap)
    dense_s, dense_bwd = dense_seconds(spec, hw, fixed.dense)
    dense_ar = fixed.dense.params * dtype_bytes(spec.job.gradient_dtype)   # on the wire
    return gpn, hw, fabric, env, cap, gpu_gib, fixed, dense_s, dense_bwd, dense_ar


def rate_sharding(spec, assignment, catalog, offer, nodes: int):
    """Our model's Eval of a given per-table plan [(type, ranks, shards)] (e.g. TorchRec's)."""
    from reclaunch.planner.shard_plan import rate

    gpn, hw, _, _, cap, _, fixed, dense_s, dense_bwd, dense_ar = _inputs(spec, catalog, offer, [])
    return rate(spec, hw, fixed, cap, nodes, gpn, dense_s, dense_bwd, dense_ar, assignment)


def _throughput(spec, cat, offer, nodes: int) -> float:
    """The model's samples/s of `spec` on `offer` (its own sharding search; no evidence)."""
    gpn, hw, _, _, cap, _, fixed, dense_s, dense_bwd, dense_ar = _inputs(spec, cat, offer, [])
    _, ev, _ = plan_sharding(spec, hw, fixed, cap, nodes, gpn, dense_s, dense_bwd, dense_ar)
    return step_time(spec, hw, ev, dense_s, dense_ar, nodes, gpn,
                     host_work(spec, hw.device, len(fixed.dense.gemms)))[2]


def _build(spec, cat, offer, nodes: int, context=None) -> Plan:
    c = constants()
    warnings: list[str] = []
    gpn, hw, fabric, env, cap, gpu_gib, fixed, dense_s, dense_bwd, dense_ar = _inputs(
        spec, cat, offer, warnings)
    world = nodes * gpn
    shard, ev, parts = plan_sharding(spec, hw, fixed, cap, nodes, gpn, dense_s, dense_bwd, dense_ar)
    mres = assemble(spec, fixed, shard, parts, cap, world)
    mem = mres.memory
    warnings.extend(mres.notes)
    if not mem.fits:
        short = (mem.total_bytes_per_gpu - mem.capacity_bytes_per_gpu) / GIB
        need = (f"needs {mem.gpus_needed} GPUs, the cluster has {world}" if mem.gpus_needed
                else "the dense part alone exceeds one GPU")
        warnings.append(f"does not fit: {mem.total_bytes_per_gpu / GIB:.1f} GiB per GPU of "
                        f"{mem.capacity_bytes_per_gpu / GIB:.1f} GiB ({short:.1f} GiB short); {need}")
    hwork = host_work(spec, hw.device, len(fixed.dense.gemms))
    step, comm, thr = step_time(spec, hw, ev, dense_s, dense_ar, nodes, gpn, hwork)
    if (w := host_bound_warning(spec, step, hwork, ev.groups)) is not None:
        warnings.append(w)
    if (w := off_reference_warning(hw, nodes)) is not None:
        warnings.append(w)
    stack = stack_view.describe(spec)
    if (w := stack_view.unexpressed(stack, nodes)) is not None:
        warnings.append(w)
    warnings.extend(stack_view.known_biases(stack, offer.gpu if offer is not None else None, nodes))
    if not stack["stated"] and offer is not None:   # the reader sees what the other stack gives
        stack["alternative"] = stack_view.alternative(spec, lambda alt: _throughput(alt, cat, offer, nodes))
    cloud = offer.cloud if offer is not None else spec.cloud
    # This host's calibration, the measured runs of this shape, the startup (planner/evidence.py).
    evi = gather(spec, cloud=cloud, instance=offer.instance_type if offer else None,
                 gpus_per_node=gpn, nodes=nodes, sharding=shard, step=step, throughput=thr,
                 context=context, modelled=lambda ref: make_plan(ref, cat).step.total_seconds)
    step, thr = evi.step, evi.throughput
    warnings.extend(evi.notes)
    samples = spec.job.dataset.samples * spec.job.dataset.epochs
    train_h = samples / thr / 3600.0
    if is_url(spec.job.checkpoint.path):   # the synchronous periodic saves stop the steps
        from reclaunch.planner.bucket_cost import stall_hours
        train_h += stall_hours(spec, cloud, nodes, world, train_h)
    hours = train_h + evi.startup.seconds / 3600.0
    cost = costmod.job_cost(spec, offer, nodes, train_h, warnings,
                            startup=(evi.startup.billed_seconds / 3600.0, evi.startup.seconds / 3600.0))
    workers = _workers(spec, offer, gpn, warnings)
    if (w := overlap_warning(spec)) is not None:
        warnings.append(w)
    if offer is not None and offer.ram_gib < c["checks"]["host_ram_min_x_gpu_memory"] * offer.gpu_memory_gib:
        warnings.append(f"host RAM {offer.ram_gib:g} GiB is below {c['checks']['host_ram_min_x_gpu_memory']}x "
                        f"GPU memory ({offer.gpu_memory_gib:g} GiB): dataloaders may swap")
    rate, rate_src = costmod.reclaim_rate(spec, cloud, offer.instance_type if offer is not None else None)
    consts = {
        "planner_data_version": c["version"],
        "catalog_version": cat.version,
        "gpu": (cat.gpu(offer.gpu)._asdict() if offer is not None else
                {k: c[clouds.here().name][k] for k in ("cpu_gflops_per_process",
                                                         "memory_gbs_per_process", "source")}),
        "hbm_gbs_effective": hw.hbm_gbs, "peak_tflops": hw.peak_tflops,
        "gemm_efficiency": hw.utilisation, "hbm_efficiency": c["perf"]["hbm_efficiency"],
        "step_overhead_seconds": step_overhead_seconds(hw.device, spec.job.execution,
                                                       assumed(spec.job).pipeline),
        "kernel_launch_seconds": c["perf"]["kernel_launch_seconds"][spec.job.execution],
        "execution": spec.job.execution, "gradient_dtype": spec.job.gradient_dtype,
        "embedding_overlap": spec.job.embedding_overlap,
        "intra_node_busbw_gbs": hw.intra_gbs, "inter_node_busbw_gbs": hw.inter_gbs,
        "alltoall_efficiency": {"intra": c["perf"]["alltoall_efficiency_intra"],
                                "inter": c["perf"]["alltoall_efficiency_inter"]},
        "embedding_inter_node_gbs": embedding_inter_gbs(hw),
        "overlap": c["perf"]["overlap"],
        "dense_params": mres.dense.params, "dense_flops_per_sample_fwd": mres.dense.flops_fwd,
        "dense_layers": mres.dense.layers, "interaction": mres.dense.interaction,
        "reserve": {k: c["memory"][k] for k in ("reserve_hbm_fraction", "reserve_dense_multiplier",
                                                 "reserve_input_multiplier")},
        "data_parallel_max_embedding_fraction": c["memory"]["data_parallel_max_embedding_fraction"],
        "reclaim_rate_per_node_hour": rate, "reclaim_rate_source": rate_src,
        "control_plane_usd_per_hour": c["control_plane_usd_per_hour"].get(cloud, 0.0),
        "storage_usd_per_gb_month": costmod.storage_rate(spec.storage.kind, cloud),
        "sources": {"memory": c["memory"]["source"], "perf": c["perf"]["source"],
                    "spot": c["spot"]["source"], "control_plane": c["control_plane_source"],
                    "storage": c["storage_source"],
                    "price": offer.source if offer is not None else None},
    }
    notice = c["spot"]["reclaim_notice_seconds"].get(cloud) if spec.spot.enabled else None
    if notice:   # what a reclaim leaves the SIGTERM checkpoint (the cloud's facts); the trainer warns past it
        consts["reclaim_notice_seconds"] = notice
        if notice < c["spot"]["short_notice_seconds"]:
            every = spec.job.checkpoint.every_minutes
            warnings.append(f"a spot reclaim on {cloud} leaves the pods {notice:g} s from SIGTERM to "
                            "SIGKILL, too short to count on the save on SIGTERM: only the periodic "
                            f"checkpoints (every {every:g} min) protect the work, up to {every:g} "
                            "min of it lost per reclaim")
    if is_url(spec.job.checkpoint.path):   # checkpoints in a bucket (else bucket_cost is not imported)
        from reclaunch.planner.bucket_cost import checkpoint_cost, notice_warning as bucket_notice
        ck = checkpoint_cost(spec, cloud, nodes, world, hours)
        consts["checkpoint_bucket"] = ck.to_json()   # bytes, write time, storage + request USD
        if (w := bucket_notice(spec, cloud, ck)) and w not in warnings:
            warnings.append(w)
    if offer is None:
        consts["note"] = f"cloud: local: CPU processes over gloo; throughput {evi.calibration}"
    lo, hi = min(spec.min_nodes, nodes), max(spec.max_nodes, nodes)
    if shard.model_parallel and world > 1:
        # Sharded tables are laid out for this world size and the trainer does not reshard
        # them on resume: an elastic job waits for its nodes instead of shrinking or growing.
        lo = hi = nodes
    plan = Plan(
        spec=spec, cloud=cloud, region=offer.region if offer else spec.region,
        zones=list(spec.zones), instance_type=offer.instance_type if offer else None, offer=offer,
        nodes=nodes, min_nodes=lo, max_nodes=hi,
        gpus_per_node=gpn, gpu=offer.gpu if offer else None, gpu_memory_gib=gpu_gib,
        fabric=fabric, nccl_env=env, memory=mem, comm=comm, step=step,
        throughput_samples_per_second=thr, duration_hours=hours, cost=cost,
        spot=spec.spot.enabled, dataloader_workers=workers, warnings=warnings, constants=consts,
        sharding=shard, throughput_model_samples_per_second=evi.throughput_model,
        throughput_basis=evi.basis, startup=evi.startup, context=context, stack=stack)
    uncertainty.apply(plan)
    if spec.budget.max_usd is not None:
        est = uncertainty.budget_usd(cost, spec.spot.enabled)
        if est is not None and est > spec.budget.max_usd:
            shown, cap = costmod.usd_apart(est, spec.budget.max_usd)
            warnings.append(f"estimated {shown} USD (P90) exceeds budget.max_usd {cap} "
                            f"({spec.where('budget', 'max_usd')}); `up` will refuse without --force")
    return plan


def _workers(spec, offer, gpn: int, warnings: list[str]) -> int:
    vcpus = offer.vcpus if offer is not None else host.cpu_count()
    per_proc = max(0, vcpus // max(gpn if offer is not None else spec.nodes * gpn, 1) - 1)
    default = min(constants()["checks"]["max_default_workers"], per_proc)
    want = spec.job.num_workers
    if want is not None and want * gpn > vcpus:
        warnings.append(f"job.num_workers {want} x {gpn} processes = {want * gpn} > {vcpus} vCPUs per node")
    return want if want is not None else default


def over_budget(plan: Plan) -> bool:
    cap = plan.spec.budget.max_usd
    est = uncertainty.budget_usd(plan.cost, plan.spot)    # the P90, not the point estimate
    return cap is not None and est is not None and est > cap

