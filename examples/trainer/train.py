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
shards), and all exit 143. When only the ranks are signalled, torchrun (elastic) restarts
them in place; when torchrun itself is (the kubelet's SIGTERM to the container's PID 1), it
stops its workers and exits 1 itself, and the job's restart policy (PyTorchJob) starts a new
pod. Either way the restart resumes from the newest valid checkpoint.
"""
from __future__ import annotations

import contextlib
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
import store  # noqa: E402
import data  # noqa: E402
import metrics  # noqa: E402
import sharding  # noqa: E402
import timing  # noqa: E402

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


def init_distributed(timeout_minutes: float = 10.0) -> Dist:
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
        # A bounded collective timeout (a dead peer fails the step instead of hanging a billed
        # node for NCCL's default), and device_id so NCCL binds its communicator to our GPU at
        # init instead of guessing it at the first collective.
        kw = {"timeout": timedelta(minutes=timeout_minutes), **({"device_id": device} if cuda else {})}
        if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
            # torchrun's c10d rendezvous keeps ONE agent TCPStore across restarts and gives
            # workers no per-attempt prefix: a restarted group can read the dead group's
            # gloo/nccl addresses and fail to connect. Namespace the keys by restart count.
            base = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world,
                                 is_master=False, timeout=timedelta(minutes=30))
            store = dist.PrefixStore(f"reclaunch/attempt_{restarts}", base)
            dist.init_process_group(backend, store=store, rank=rank, world_size=world, **kw)
        else:
            dist.init_process_group(backend, init_method="env://", **kw)
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
    if args.checkpoint_dir and store.is_url(args.checkpoint_dir):
        return store.join(args.checkpoint_dir, "result.json")    # next to the step-N/ prefixes
    if args.checkpoint_dir:
        return os.path.join(os.path.dirname(os.path.abspath(args.checkpoint_dir)), "result.json")
    return None


def write_result(args, summary: dict) -> None:
    path = result_path(args)
    if path and store.is_url(path):
        fs, p = store.filesystem(path)
        fs.pipe_file(p, (json.dumps(summary, indent=2) + "\n").encode())
    elif path:
        checkpoint.atomic_write_bytes(path, (json.dumps(summary, indent=2) + "\n").encode())


def config_fingerprint(args, plan=None) -> dict:
    """What a checkpoint must match to be resumed (the placement may differ: DCP reshards)."""
    tables = ([[t.name, t.rows, t.dim, t.sequence] for t in plan.tables] if plan
              else [list(args.table_rows), args.embedding_dim])
    return {"model": args.model, "engine": args.engine, "tables": tables, "mlp": list(args.mlp),
            "optimizer": args.optimizer}


def make_engine(args, d: Dist, log):
    """-> (engine, plan). Imports torchrec only for the torchrec engine; a plan, precision or
    memory the engine cannot run is ONE line on stderr and exit 1 (no traceback, no hang)."""
    import precision

    history = args.history_length or (50 if args.model == "din" else 0)
    try:
        plan = sharding.from_env(os.environ, args.table_rows, args.embedding_dim, d.world_size,
                                 history if args.model == "din" else 0, args.pooling)
        if args.engine == "ddp":
            from engine_ddp import DDPEngine
            return DDPEngine(args, d, log, plan), plan
        from engine_rec import RecEngine

        if not dist.is_initialized():  # DMP needs a process group even for one process
            dist.init_process_group("nccl" if d.device.type == "cuda" else "gloo", store=dist.HashStore(),
                                    rank=0, world_size=1)
        return RecEngine(args, d, plan, log), plan
    except (sharding.PlanError, precision.PrecisionError, ValueError) as exc:
        raise SystemExit(f"error: {exc}") from None


def _straggle(fault) -> None:
    """The straggler drill sleeps inside forward/backward (after the data-ready mark), so the
    slow rank's own compute shows it and the ranks waiting for it show only collective waits."""
    if fault.straggle:
        time.sleep(fault.straggle)


def main(argv: list[str] | None = None) -> int:
    with contextlib.ExitStack() as cleanup:   # run on every way out: return, raise, SystemExit
        return _main(argv, cleanup)


def _main(argv: list[str] | None, cleanup: contextlib.ExitStack) -> int:
    args = parse_config(argv)
    d = init_distributed(args.nccl_timeout_minutes)

    def log(msg: str) -> None:
        if d.is_main:
            metrics.write_line(msg)  # whole lines: every rank shares stdout under torchrun

    stop = StopFlag()
    stop.install()
    fault = metrics.Fault(os.environ.get("RECLAUNCH_FAULT"), d.rank)
    torch.manual_seed(args.seed)
    engine, plan = make_engine(args, d, log)
    sharded = engine.name == "torchrec"
    fingerprint = config_fingerprint(args, plan)
    if d.is_main and args.checkpoint_dir and not store.is_url(args.checkpoint_dir):
        os.makedirs(args.checkpoint_dir, exist_ok=True)
    start_step, extras, found = engine.restore(args.checkpoint_dir, fingerprint) if args.checkpoint_dir \
        else (0, {}, None)
    if found:
        log(f"info resumed_from_step={start_step} checkpoint={found}")
    engine.wrap()
    if fault.active:
        metrics.write_line(f"info fault_injection rank={d.rank} {fault.describe()}")

    sequences = [(t.rows, max(1, int(round(t.pooling_factor)))) for t in plan.sequences]
    source = data.make_source(args.dataset, args.data_dir, [t.rows for t in plan.pooled], args.batch_size,
                              args.seed, d.rank, d.world_size, sequences=sequences)
    clock = timing.StepClock(d.device)
    feed = iter(data.loader(source, start_step * args.grad_accum, args.num_workers,
                            pin_memory=d.device.type == "cuda", transform=engine.transform()))
    cleanup.callback(data.shutdown_workers, feed)     # never left to the interpreter's exit
    batches = timing.TimedIter(feed, fault.slow_data, clock)
    per_rank_step = args.batch_size * args.grad_accum
    samples_per_step = per_rank_step * d.world_size
    log(f"info model={args.model} world_size={d.world_size} device={d.device.type} "
        f"dataset={type(source).__name__} params={engine.params} "
        f"start_step={start_step} steps={args.steps} restarts={d.restarts}")
    log(f"info engine={engine.name} {engine.describe()}")
    if sharded:
        mine, replicated = engine.local_tables()
        metrics.write_line(f"info placement rank={d.rank} sharded={','.join(mine) or '-'} "
                           f"replicated={','.join(replicated) or '-'}")

    first_loss = extras.get("first_loss")
    final_loss = extras.get("final_loss")
    loss_window = []                       # device scalars, read on logging steps only
    last_ckpt_time = t_window = t_start = time.monotonic()
    ckpt_seconds = args.checkpoint_every_minutes * 60.0
    window, run = metrics.Interval(), metrics.Interval()
    lagged = timing.LaggedFlags(d.device, d.world_size)
    nccl = metrics.NcclProbe(d.nccl_log)
    grad_norm = None
    pipeline = getattr(engine, "pipeline", None)
    if pipeline is not None:
        engine.marked.clock = clock

    def save(step: int, background: bool = False) -> None:
        """Every save says how long the training stood still for it, and warns when it would
        not fit in the spot reclaim notice (the SIGTERM save has that long, then SIGKILL)."""
        if not args.checkpoint_dir:
            return
        t0 = time.monotonic()
        if fault.slow_save:
            time.sleep(fault.slow_save)
        meta = {"config": fingerprint, "world_size": d.world_size, **engine.checkpoint_meta(),
                "extras": {"first_loss": first_loss, "final_loss": final_loss}}
        path = engine.save(args.checkpoint_dir, step, meta, args.keep_checkpoints,
                           **({"background": True} if background else {}))
        secs = time.monotonic() - t0
        if getattr(engine, "saved_async", False):   # written behind the next steps: size unknown yet
            log(f"info checkpoint step={step} path={path} seconds={secs:.2f} async=true")
            return
        size = engine.checkpoint_bytes(path) if d.is_main else None
        log(f"info checkpoint step={step} path={path} seconds={secs:.2f}"
            + (f" bytes={size} mb_per_s={size / 1e6 / max(secs, 1e-9):.3g}" if size else ""))
        notice = args.reclaim_notice_seconds
        if notice > 0 and secs > notice:
            log(f"warn checkpoint_slower_than_notice seconds={secs:.1f} notice={notice:g}: a spot reclaim "
                "would SIGKILL the SIGTERM save, and the job resume from the last periodic checkpoint")

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

    def stop_now(step: int) -> int:
        nonlocal final_loss
        save(step)
        write_result(args, summary(step, "interrupted")) if d.is_main else None
        log(f"info sigterm step={step} exit={SIGTERM_EXIT}")
        _shutdown(d.world_size > 1)
        return SIGTERM_EXIT

    step = start_step
    engine.model.train()
    while step < args.steps:
        engine.set_lr(step + 1)
        m0 = clock.mark()
        hook = fault.loss_hook(step + 1)
        logging = (step + 1) % args.log_every == 0 or step + 1 == args.steps
        try:
            if pipeline is not None:
                # zero_grad, the fetch of a batch two ahead, forward, backward and the
                # optimizer step all happen inside; the loader wrapper marks the fetch and the
                # optimizer wrapper its step (timing.MarkedOptimizer), so neither is counted
                # as forward/backward or communication.
                m1 = clock.mark()
                _straggle(fault)
                step_loss = engine.pipeline_step(batches, hook)
                end = clock.mark()
                m2, m3 = engine.optimizer_marks() or (end, end)
            else:
                step_loss = torch.zeros((), device=d.device)
                m1 = None
                for i in range(args.grad_accum):
                    batch = engine.prepare(next(batches))
                    m1 = m1 or clock.mark()
                    if i == 0:
                        _straggle(fault)
                    step_loss += engine.forward_backward(batch, hook)
                m2 = clock.mark()
            if logging:
                grad_norm = engine.dense_grad_norm()
            if pipeline is None:
                engine.optimizer_step()
                m3 = clock.mark()
        except Exception as exc:
            # The loader died after a stop was asked for (a worker the stop reached first):
            # the model is as the last finished step left it (both pipelines fetch before
            # their forward), so that step is saved as a SIGTERM would save it.
            if not (stop.set and batches.failed is not None):
                raise
            log(f"warn loader_failed_after_stop step={step} "
                f"error={metrics.short(f'{type(exc).__name__}: {exc}')!r}")
            return stop_now(step)
        step += 1
        if step == start_step + 1:
            log(f"info precision_state {engine.precision_state}")

        # One small collective per step: agreement on stop/checkpoint so every rank leaves
        # the loop at the same step (SIGTERM may reach ranks apart). Read one step late on
        # CUDA (timing.LaggedFlags): no per-step device sync.
        now = time.monotonic()
        due = (args.checkpoint_every_steps > 0 and step % args.checkpoint_every_steps == 0) or \
              (ckpt_seconds > 0 and now - last_ckpt_time >= ckpt_seconds)
        values = [float(stop.set), float(due)]
        agreed = lagged.push(values) if step < args.steps else (lagged.flush() or lagged.push(values))
        m4 = clock.mark()
        clock.add((m0, m1, m2, m3, m4), batches.take(), engine.clock.take(m2), wait_inside=pipeline is not None)
        loss_window.append(step_loss.detach())
        if logging:
            losses = torch.stack(loss_window).float()
            if d.world_size > 1:
                dist.all_reduce(losses)
            values = (losses / d.world_size).tolist()
            if first_loss is None:
                first_loss = values[0]
            final_loss = sum(values) / len(values)
            now = time.monotonic()
            for parts in clock.resolve():
                for iv in (window, run):
                    iv.steps += 1
                    iv.add(**parts)
            log(f"step={step} loss={final_loss:.4f} "
                f"samples_per_s={len(values) * samples_per_step / max(now - t_window, 1e-9):.1f}")
            emit(step, window, final_loss)
            window.reset()
            loss_window, t_window = [], now
        if agreed is None:
            continue
        stop_n, due_n = agreed
        if stop_n > 0:
            if loss_window:      # every rank stops at this step: one more collective is safe
                losses = torch.stack(loss_window).float()
                if d.world_size > 1:
                    dist.all_reduce(losses)
                final_loss = float(losses.mean()) / d.world_size
            return stop_now(step)
        if due_n > 0 and step < args.steps:
            save(step, background=args.checkpoint_async)
            last_ckpt_time = time.monotonic()

    engine.finish()   # a background checkpoint still being written
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
