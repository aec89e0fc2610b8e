"""reclaunch reference trainer: DeepFM / DCNv2 with DDP, run by torchrun or a PyTorchJob.

    torchrun --nproc-per-node=2 examples/trainer/train.py --model deepfm --steps 300

Every option is a flag and an environment variable; the flag wins. Log lines on rank 0:
    step=123 loss=0.6123 samples_per_s=4567.8
    done steps=300 final_loss=0.5012 samples_per_s=41234.5
On SIGTERM every rank finishes its step, rank 0 writes a checkpoint, and all exit 143
so torchrun (elastic) restarts them; the restart resumes from the newest valid checkpoint.
"""
from __future__ import annotations

import argparse
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
import torch.nn.functional as F  # noqa: E402

import checkpoint  # noqa: E402
import data  # noqa: E402
from model import build_model  # noqa: E402
from optim import build_optimizer  # noqa: E402

SIGTERM_EXIT = 128 + signal.SIGTERM


def _ints(text: str) -> list[int]:
    return [_int(x) for x in str(text).split(",") if x.strip()]


def _int(text) -> int:
    text = str(text).strip()
    try:
        return int(text)  # accepts 1_000_000
    except ValueError:
        return int(float(text))  # accepts 1e6


def _bool(text) -> bool:
    return str(text).strip().lower() in ("1", "true", "yes", "on")


# flag, env var, parser, default, help
OPTIONS = [
    ("--model", "RECLAUNCH_MODEL", str, "deepfm", "deepfm | dcnv2"),
    ("--batch-size", "RECLAUNCH_BATCH_SIZE", _int, 256, "micro-batch per process"),
    ("--grad-accum", "RECLAUNCH_GRAD_ACCUM", _int, 1, "micro-batches per optimizer step"),
    ("--precision", "RECLAUNCH_PRECISION", str, "bf16", "fp32 | tf32 | bf16 | fp16 (CPU always runs fp32)"),
    ("--optimizer", "RECLAUNCH_OPTIMIZER", str, "adam", "sgd | adagrad | rowwise_adagrad | adam"),
    ("--lr", "RECLAUNCH_LR", float, None, "learning rate (default per optimizer)"),
    ("--embedding-dim", "RECLAUNCH_EMBEDDING_DIM", _int, 16, "embedding dimension"),
    ("--table-rows", "RECLAUNCH_TABLE_ROWS", _ints, data.DEFAULT_TABLE_ROWS, "rows per table, comma-separated"),
    ("--mlp", "RECLAUNCH_MLP", _ints, [64, 32], "deep (DeepFM) / top (DCNv2) MLP sizes"),
    ("--bottom-mlp", "RECLAUNCH_BOTTOM_MLP", _ints, [64], "DCNv2 bottom MLP sizes (dense features)"),
    ("--cross-layers", "RECLAUNCH_CROSS_LAYERS", _int, 3, "DCNv2 cross layers"),
    ("--cross-rank", "RECLAUNCH_CROSS_RANK", _int, 0, "DCNv2 low-rank cross (0 = full rank)"),
    ("--steps", "RECLAUNCH_STEPS", _int, 300, "total optimizer steps"),
    ("--log-every", "RECLAUNCH_LOG_EVERY", _int, 20, "log a step= line every N steps"),
    ("--num-workers", "RECLAUNCH_NUM_WORKERS", _int, 0, "DataLoader workers per process"),
    ("--data-dir", "DATA_DIR", str, None, "directory of .npy / .parquet shards"),
    ("--dataset", "RECLAUNCH_DATASET", str, "auto", "auto | synthetic | files"),
    ("--checkpoint-dir", "CHECKPOINT_DIR", str, None, "checkpoint directory (unset: no checkpoints)"),
    ("--checkpoint-every-minutes", "CHECKPOINT_EVERY_MINUTES", float, 15.0, "time between checkpoints"),
    ("--checkpoint-every-steps", "RECLAUNCH_CHECKPOINT_EVERY_STEPS", _int, 0, "steps between checkpoints (0 = off)"),
    ("--keep-checkpoints", "RECLAUNCH_KEEP_CHECKPOINTS", _int, 3, "keep the newest K checkpoints"),
    ("--seed", "RECLAUNCH_SEED", _int, 1234, "seed for model init and synthetic data"),
    ("--result", "RECLAUNCH_RESULT", str, None, "result JSON path (default CHECKPOINT_DIR/../result.json)"),
    ("--fused-embedding", "RECLAUNCH_FUSED_EMBEDDING", _bool, True, "one fused EmbeddingBag (false: per table)"),
]


@dataclass
class Dist:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    restarts: int

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def parse_config(argv: list[str] | None = None, environ=None) -> argparse.Namespace:
    environ = os.environ if environ is None else environ
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for flag, env, _, default, help_ in OPTIONS:
        parser.add_argument(flag, default=None, help=f"{help_} [env {env}; default {default}]")
    args = parser.parse_args(argv)
    for flag, env, conv, default, _ in OPTIONS:
        key = flag[2:].replace("-", "_")
        raw = getattr(args, key)
        if raw is None and environ.get(env, "") != "":
            raw = environ[env]
        try:
            setattr(args, key, default if raw is None else conv(raw))
        except ValueError:
            parser.error(f"{flag} / {env}: cannot parse {raw!r}")
    choices = {"model": ("deepfm", "dcnv2"), "precision": ("fp32", "tf32", "bf16", "fp16"),
               "optimizer": ("sgd", "adagrad", "rowwise_adagrad", "adam"),
               "dataset": ("auto", "synthetic", "files")}
    for key, allowed in choices.items():
        if getattr(args, key) not in allowed:
            parser.error(f"--{key.replace('_', '-')}: {getattr(args, key)!r} is not one of {', '.join(allowed)}")
    if args.batch_size < 1 or args.grad_accum < 1 or args.steps < 0 or args.log_every < 1:
        parser.error("batch size, grad accumulation and log interval must be >= 1, steps >= 0")
    return args


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
    return Dist(rank, world, local_rank, device, restarts)


def precision_setup(precision: str, device: torch.device):
    """-> (autocast context factory, GradScaler or None). CPU trains in plain fp32."""
    if device.type != "cuda":
        return contextlib.nullcontext, None
    tf32 = precision in ("tf32", "bf16", "fp16")
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    if precision in ("bf16", "fp16"):
        dtype = torch.bfloat16 if precision == "bf16" else torch.float16
        scaler = torch.amp.GradScaler("cuda") if precision == "fp16" else None
        return (lambda: torch.autocast("cuda", dtype=dtype)), scaler
    return contextlib.nullcontext, None


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


def config_fingerprint(args) -> dict:
    return {"model": args.model, "embedding_dim": args.embedding_dim, "table_rows": list(args.table_rows),
            "mlp": list(args.mlp), "optimizer": args.optimizer}


def restore(args, d: Dist, model, optimizer, log) -> tuple[int, dict]:
    """Load the newest valid checkpoint on every rank; -> (step, saved extras)."""
    if not args.checkpoint_dir:
        return 0, {}
    if d.is_main:
        checkpoint.remove_stale_tmp(args.checkpoint_dir)
    found = checkpoint.latest_valid(args.checkpoint_dir, log=log) if d.is_main else None
    state = found[2] if found else None
    if d.world_size > 1:
        # Rank 0 chose; it ships the state itself so ranks need not share a filesystem.
        box = [state]
        dist.broadcast_object_list(box, src=0)
        state = box[0]
    if state is None:
        return 0, {}
    if state.get("config") != config_fingerprint(args):
        raise SystemExit(f"checkpoint in {args.checkpoint_dir} was written for {state.get('config')}, "
                         f"not {config_fingerprint(args)}: use a fresh CHECKPOINT_DIR")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if found:
        log(f"info resumed_from_step={state['step']} checkpoint={found[1]}")
    return int(state["step"]), state.get("extras", {})


def main(argv: list[str] | None = None) -> int:
    args = parse_config(argv)
    d = init_distributed()

    def log(msg: str) -> None:
        if d.is_main:
            print(msg, flush=True)

    stop = StopFlag()
    stop.install()
    torch.manual_seed(args.seed)
    model = build_model(args.model, args.table_rows, args.embedding_dim, args.mlp, args.bottom_mlp,
                        args.cross_layers, args.cross_rank, fused=args.fused_embedding).to(d.device)
    optimizer = build_optimizer(args.optimizer, model, args.lr)
    start_step, extras = restore(args, d, model, optimizer, log)
    ddp = d.world_size > 1
    train_model = (torch.nn.parallel.DistributedDataParallel(
        model, device_ids=[d.device.index] if d.device.type == "cuda" else None) if ddp else model)
    autocast, scaler = precision_setup(args.precision, d.device)
    if d.device.type != "cuda" and args.precision != "fp32":
        log(f"info precision={args.precision} requested; CPU trains in fp32")

    source = data.make_source(args.dataset, args.data_dir, args.table_rows, args.batch_size,
                              args.seed, d.rank, d.world_size)
    batches = iter(data.loader(source, start_step * args.grad_accum, args.num_workers,
                               pin_memory=d.device.type == "cuda"))
    samples_per_step = args.batch_size * args.grad_accum * d.world_size
    log(f"info model={args.model} world_size={d.world_size} device={d.device.type} "
        f"dataset={type(source).__name__} params={sum(p.numel() for p in model.parameters())} "
        f"start_step={start_step} steps={args.steps} restarts={d.restarts}")

    first_loss = extras.get("first_loss")
    window_loss, window_steps = 0.0, 0
    final_loss = extras.get("final_loss")
    last_ckpt_time = t_window = t_start = time.monotonic()
    ckpt_seconds = args.checkpoint_every_minutes * 60.0

    def save(step: int) -> None:
        if args.checkpoint_dir and d.is_main:
            state = {"step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                     "config": config_fingerprint(args), "world_size": d.world_size,
                     "extras": {"first_loss": first_loss, "final_loss": final_loss}}
            path = checkpoint.save(args.checkpoint_dir, step, state, keep=args.keep_checkpoints)
            log(f"info checkpoint step={step} path={path}")
        if ddp:
            dist.barrier()

    def summary(step: int, status: str) -> dict:
        elapsed = time.monotonic() - t_start
        return {"status": status, "steps": step, "first_loss": first_loss, "final_loss": final_loss,
                "samples_per_s": round((step - start_step) * samples_per_step / max(elapsed, 1e-9), 1),
                "resumed_from_step": start_step, "restarts": d.restarts, "world_size": d.world_size,
                "model": args.model, "global_batch": samples_per_step}

    step = start_step
    train_model.train()
    while step < args.steps:
        step_loss = torch.zeros((), device=d.device)
        for micro in range(args.grad_accum):
            dense, sparse, labels = (t.to(d.device, non_blocking=True) for t in next(batches))
            sync = not ddp or micro == args.grad_accum - 1
            with (contextlib.nullcontext() if sync else train_model.no_sync()):
                with autocast():
                    logits = train_model(dense, sparse)
                loss = F.binary_cross_entropy_with_logits(logits.float(), labels) / args.grad_accum
                (scaler.scale(loss) if scaler else loss).backward()
            step_loss += loss.detach()
        if scaler:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1

        # One small collective per step: global mean loss, and agreement on stop/checkpoint
        # so every rank leaves the loop at the same step (SIGTERM may reach ranks apart).
        now = time.monotonic()
        due = (args.checkpoint_every_steps > 0 and step % args.checkpoint_every_steps == 0) or \
              (ckpt_seconds > 0 and now - last_ckpt_time >= ckpt_seconds)
        flags = torch.stack([step_loss.float(), torch.tensor(float(stop.set), device=d.device),
                             torch.tensor(float(due), device=d.device)])
        if ddp:
            dist.all_reduce(flags)
        loss_sum, stop_n, due_n = flags.tolist()
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
            window_loss, window_steps, t_window = 0.0, 0, now
        if stop_n > 0:
            if window_steps:
                final_loss = window_loss / window_steps
            save(step)
            write_result(args, summary(step, "interrupted")) if d.is_main else None
            log(f"info sigterm step={step} exit={SIGTERM_EXIT}")
            _shutdown(ddp)
            return SIGTERM_EXIT
        if due_n > 0 and step < args.steps:
            save(step)
            last_ckpt_time = time.monotonic()

    if step > start_step or not checkpoint.list_checkpoints(args.checkpoint_dir or ""):
        save(step)
    result = summary(step, "completed")
    if d.is_main:
        write_result(args, result)
    log(f"done steps={step} final_loss={final_loss if final_loss is None else f'{final_loss:.4f}'} "
        f"samples_per_s={result['samples_per_s']:.1f}")
    _shutdown(ddp)
    return 0


def _shutdown(ddp: bool) -> None:
    """Leave together: a rank that tears its process group down while a peer is still in a
    collective aborts that peer ("terminate called without an active exception")."""
    if not (ddp and dist.is_initialized()):
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
