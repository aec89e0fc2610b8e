"""reclaunch reference trainer: DeepFM / DCNv2 / DLRM / DIN on TorchRec, run by torchrun or a PyTorchJob.

    torchrun --nproc-per-node=2 examples/trainer/train.py --model deepfm --steps 300

Embeddings are sharded as reclaunch's plan says (RECLAUNCH_SHARDING, see sharding.py) under
TorchRec's DistributedModelParallel (engine_rec.py); `--engine ddp` is the plain-PyTorch
data-parallel path (engine_ddp.py). Every option is a flag and an environment variable; the
flag wins. Log lines on rank 0:
    step=123 loss=0.6123 samples_per_s=4567.8
    done steps=300 final_loss=0.5012 samples_per_s=41234.5
and on every rank, per logging interval, one `RECLAUNCH_METRICS {json}` line (metrics.py).
On SIGTERM every rank finishes its step, all checkpoint (sharded: every rank writes its own
shards), and all exit 143 so torchrun (elastic) restarts them; the restart resumes from the
newest valid checkpoint.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from dataclasses import dataclass
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # run as a script by torchrun

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import checkpoint  # noqa: E402
import data  # noqa: E402
import metrics  # noqa: E402
import sharding  # noqa: E402

SIGTERM_EXIT = 128 + signal.SIGTERM


from config import OPTIONS, parse_config  # noqa: E402,F401  (re-exported)


@dataclass
class Dist:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    restarts: int
    nccl_log: str | None = None

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def init_distributed() -> Dist:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    else:
        # The launcher knows how many processes share this machine (several simulated nodes
        # under `cloud: local`): its OMP_NUM_THREADS wins over our per-node guess.
        local_world = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
        threads = os.environ.get("OMP_NUM_THREADS", "")
        torch.set_num_threads(int(threads) if threads.isdigit() and int(threads) > 0
                              else max(1, (os.cpu_count() or 1) // local_world))
    restarts = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    # NCCL says once, at init, which transport it uses (IB, EFA/OFI, socket...): keep those lines.
    nccl_log = metrics.setup_nccl_log() if cuda and world > 1 else None
    if world > 1:
        # MASTER_ADDR/PORT, RANK, WORLD_SIZE come from torchrun or the PyTorchJob operator.
        backend = "nccl" if cuda else "gloo"
        if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
            # torchrun's c10d rendezvous keeps ONE agent TCPStore across restarts and gives
            # workers no per-attempt prefix: a restarted group can read the dead group's
            # gloo/nccl addresses and fail to connect. Namespace the keys by restart count.
            base = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world,
                                 is_master=False, timeout=timedelta(minutes=30))
            store = dist.PrefixStore(f"reclaunch/attempt_{restarts}", base)
            dist.init_process_group(backend, store=store, rank=rank, world_size=world)
        else:
            dist.init_process_group(backend, init_method="env://")
    return Dist(rank, world, local_rank, device, restarts, nccl_log)


class StopFlag:
    def __init__(self):
        self.set = False

    def install(self) -> None:
        signal.signal(signal.SIGTERM, self._handle)

    def _handle(self, signum, frame) -> None:  # only flag: the step in flight completes
        self.set = True


def result_path(args) -> str | None:
    if args.result:
        return args.result
    if args.checkpoint_dir:
        return os.path.join(os.path.dirname(os.path.abspath(args.checkpoint_dir)), "result.json")
    return None


def write_result(args, summary: dict) -> None:
    path = result_path(args)
    if path:
        checkpoint.atomic_write_bytes(path, (json.dumps(summary, indent=2) + "\n").encode())


def config_fingerprint(args, plan=None) -> dict:
    """What a checkpoint must match to be resumed (the placement may differ: DCP reshards)."""
    tables = ([[t.name, t.rows, t.dim, t.sequence] for t in plan.tables] if plan
              else [list(args.table_rows), args.embedding_dim])
    return {"model": args.model, "engine": args.engine, "tables": tables, "mlp": list(args.mlp),
            "optimizer": args.optimizer}


def make_engine(args, d: Dist, log):
    """-> (engine, sharding plan or None). Imports torchrec only for the torchrec engine."""
    if args.engine == "ddp":
        from engine_ddp import DDPEngine
        return DDPEngine(args, d, log), None
    from engine_rec import RecEngine

    if not dist.is_initialized():  # DMP needs a process group even for one process
        dist.init_process_group("nccl" if d.device.type == "cuda" else "gloo", store=dist.HashStore(),
                                rank=0, world_size=1)
    history = args.history_length or (50 if args.model == "din" else 0)
    try:
        plan = sharding.from_env(os.environ, args.table_rows, args.embedding_dim, d.world_size,
                                 history if args.model == "din" else 0)
        return RecEngine(args, d, plan, log), plan
    except (sharding.PlanError, ValueError) as exc:
        raise SystemExit(f"error: {exc}") from None


def main(argv: list[str] | None = None) -> int:
    args = parse_config(argv)
    d = init_distributed()

    def log(msg: str) -> None:
        if d.is_main:
            metrics.write_line(msg)  # whole lines: every rank shares stdout under torchrun

    stop = StopFlag()
    stop.install()
    fault = metrics.Fault(os.environ.get("RECLAUNCH_FAULT"), d.rank)
    torch.manual_seed(args.seed)
    engine, plan = make_engine(args, d, log)
    fingerprint = config_fingerprint(args, plan)
    if d.is_main and args.checkpoint_dir:
        os.makedirs(args.checkpoint_dir, exist_ok=True)
    start_step, extras, found = engine.restore(args.checkpoint_dir, fingerprint) if args.checkpoint_dir \
        else (0, {}, None)
    if found:
        log(f"info resumed_from_step={start_step} checkpoint={found}")
    engine.wrap()
    if d.device.type != "cuda" and args.precision != "fp32":
        log(f"info precision={args.precision} requested; CPU trains in fp32")
    if fault.active:
        metrics.write_line(f"info fault_injection rank={d.rank} {fault.describe()}")

    sequences = [(t.rows, max(1, int(round(t.pooling_factor)))) for t in plan.sequences] if plan else []
    rows = [t.rows for t in plan.pooled] if plan else args.table_rows
    source = data.make_source(args.dataset, args.data_dir, rows, args.batch_size,
                              args.seed, d.rank, d.world_size, sequences=sequences)
    batches = iter(data.loader(source, start_step * args.grad_accum, args.num_workers,
                               pin_memory=d.device.type == "cuda"))
    per_rank_step = args.batch_size * args.grad_accum
    samples_per_step = per_rank_step * d.world_size
    log(f"info model={args.model} world_size={d.world_size} device={d.device.type} "
        f"dataset={type(source).__name__} params={engine.params} "
        f"start_step={start_step} steps={args.steps} restarts={d.restarts}")
    log(f"info engine={engine.name} {engine.describe()}")
    if plan:
        mine, replicated = engine.local_tables()
        metrics.write_line(f"info placement rank={d.rank} sharded={','.join(mine) or '-'} "
                           f"replicated={','.join(replicated) or '-'}")

    first_loss = extras.get("first_loss")
    window_loss, window_steps = 0.0, 0
    final_loss = extras.get("final_loss")
    last_ckpt_time = t_window = t_start = time.monotonic()
    ckpt_seconds = args.checkpoint_every_minutes * 60.0
    window, run = metrics.Interval(), metrics.Interval()
    nccl = metrics.NcclProbe(d.nccl_log)
    grad_norm = None

    def save(step: int) -> None:
        if args.checkpoint_dir:
            meta = {"config": fingerprint, "world_size": d.world_size, **engine.checkpoint_meta(),
                    "extras": {"first_loss": first_loss, "final_loss": final_loss}}
            path = engine.save(args.checkpoint_dir, step, meta, args.keep_checkpoints)
            log(f"info checkpoint step={step} path={path}")

    def summary(step: int, status: str) -> dict:
        elapsed = time.monotonic() - t_start
        return {"status": status, "steps": step, "first_loss": first_loss, "final_loss": final_loss,
                "samples_per_s": round((step - start_step) * samples_per_step / max(elapsed, 1e-9), 1),
                "resumed_from_step": start_step, "restarts": d.restarts, "world_size": d.world_size,
                "model": args.model, "global_batch": samples_per_step, "engine": engine.name}

    def emit(step: int, iv: metrics.Interval, loss, **extra) -> None:
        n = max(iv.steps, 1)
        rate = iv.steps * per_rank_step / max(time.monotonic() - iv.t0, 1e-9)
        mem, kind = metrics.peak_memory(d.device)
        transport, gdr = nccl.get()
        metrics.write_line(metrics.line(rank=d.rank, world_size=d.world_size, step=step, time=round(time.time(), 3),
                           interval_steps=iv.steps, samples_per_s=rate,
                           global_samples_per_s=rate * d.world_size if d.is_main else None,
                           **{k: v / n for k, v in iv.sums.items()}, peak_mem_bytes=mem, mem_kind=kind,
                           loss=loss, grad_norm=grad_norm, nccl_transport=transport, gdr=gdr, **extra))

    step = start_step
    engine.model.train()
    while step < args.steps:
        t_step = time.perf_counter()
        wait = fwd_bwd = 0.0
        step_loss = torch.zeros((), device=d.device)
        for _ in range(args.grad_accum):
            t0 = time.perf_counter()
            batch = next(batches)
            if fault.slow_data:
                time.sleep(fault.slow_data)
            batch = engine.prepare(batch)
            t1 = time.perf_counter()
            if fault.straggle:
                time.sleep(fault.straggle)
            step_loss += engine.forward_backward(batch, fault.loss_hook(step + 1))
            wait, fwd_bwd = wait + t1 - t0, fwd_bwd + time.perf_counter() - t1
        logging = (step + 1) % args.log_every == 0 or step + 1 == args.steps
        if logging:
            grad_norm = engine.dense_grad_norm()
        t2 = time.perf_counter()
        engine.optimizer_step()
        t3 = time.perf_counter()
        step += 1

        # One small collective per step: global mean loss, and agreement on stop/checkpoint
        # so every rank leaves the loop at the same step (SIGTERM may reach ranks apart).
        now = time.monotonic()
        due = (args.checkpoint_every_steps > 0 and step % args.checkpoint_every_steps == 0) or \
              (ckpt_seconds > 0 and now - last_ckpt_time >= ckpt_seconds)
        flags = torch.stack([step_loss.float(), torch.tensor(float(stop.set), device=d.device),
                             torch.tensor(float(due), device=d.device)])
        if d.world_size > 1:
            dist.all_reduce(flags)
        loss_sum, stop_n, due_n = flags.tolist()
        t4 = time.perf_counter()
        comm_in_fwd_bwd = engine.clock.take()
        for iv in (window, run):
            iv.steps += 1
            iv.add(step_s=t4 - t_step, data_wait_s=wait, fwd_bwd_s=max(0.0, fwd_bwd - comm_in_fwd_bwd),
                   optimizer_s=t3 - t2, comm_s=comm_in_fwd_bwd + t4 - t3)
        mean_loss = loss_sum / d.world_size
        if first_loss is None:
            first_loss = mean_loss
        window_loss += mean_loss
        window_steps += 1
        if step % args.log_every == 0 or step == args.steps:
            now = time.monotonic()
            final_loss = window_loss / window_steps
            log(f"step={step} loss={final_loss:.4f} "
                f"samples_per_s={window_steps * samples_per_step / max(now - t_window, 1e-9):.1f}")
            emit(step, window, final_loss)
            window.reset()
            window_loss, window_steps, t_window = 0.0, 0, now
        if stop_n > 0:
            if window_steps:
                final_loss = window_loss / window_steps
            save(step)
            write_result(args, summary(step, "interrupted")) if d.is_main else None
            log(f"info sigterm step={step} exit={SIGTERM_EXIT}")
            _shutdown(d.world_size > 1)
            return SIGTERM_EXIT
        if due_n > 0 and step < args.steps:
            save(step)
            last_ckpt_time = time.monotonic()

    if step > start_step or not engine.list_checkpoints(args.checkpoint_dir or ""):
        save(step)
    result = summary(step, "completed")
    if d.is_main:
        write_result(args, result)
    emit(step, run, final_loss, final=True)
    log(f"done steps={step} final_loss={final_loss if final_loss is None else f'{final_loss:.4f}'} "
        f"samples_per_s={result['samples_per_s']:.1f}")
    _shutdown(d.world_size > 1)
    return 0


def _shutdown(ddp: bool) -> None:
    """Leave together: a rank that tears its process group down while a peer is still in a
    collective aborts that peer ("terminate called without an active exception")."""
    if not dist.is_initialized():
        return
    if not ddp:
        dist.destroy_process_group()
        return
    try:
        if dist.get_backend() == "gloo":
            dist.monitored_barrier(timeout=timedelta(seconds=60))
        else:
            dist.barrier()
    except Exception as exc:  # a peer already gone: nothing to wait for
        print(f"warn shutdown barrier: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
