"""The trainer's options: every one a flag and an environment variable; the flag wins.

Env names are the contract with reclaunch (manifests/env.py renders them into the job).
"""
from __future__ import annotations

import argparse
import os

import data


def _ints(text: str) -> list[int]:
    return [_int(x) for x in str(text).split(",") if x.strip()]


def _int(text) -> int:
    text = str(text).strip()
    try:
        return int(text)  # accepts 1_000_000
    except ValueError:
        return int(float(text))  # accepts 1e6


def _floats(text: str) -> list[float]:
    return [float(x) for x in str(text).split(",") if x.strip()]


def _bool(text) -> bool:
    return str(text).strip().lower() in ("1", "true", "yes", "on")


# flag, env var, parser, default, help
OPTIONS = [
    ("--model", "RECLAUNCH_MODEL", str, "deepfm", "deepfm | dcnv2 | dlrm | din"),
    ("--engine", "RECLAUNCH_ENGINE", str, "torchrec", "torchrec (sharded by the plan) | ddp (tables replicated)"),
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
    ("--attention-mlp", "RECLAUNCH_ATTENTION_MLP", _ints, [80, 40], "DIN attention MLP sizes"),
    ("--history-length", "RECLAUNCH_HISTORY_LENGTH", _int, 0,
     "DIN behaviour length without RECLAUNCH_SHARDING (last table; 0: 50 for din)"),
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
    # issue 22: what the spec says reaches the model and the optimizers
    ("--embedding-dtype", "RECLAUNCH_EMBEDDING_DTYPE", str, "fp32", "fp32 | fp16 | bf16: table weights (TorchRec data_type)"),
    ("--pooling", "RECLAUNCH_POOLING", _ints, [], "ids per sample per table without RECLAUNCH_SHARDING (default 1)"),
    ("--weight-decay", "RECLAUNCH_WEIGHT_DECAY", float, 0.0, "weight decay (dense and fused embedding optimizers)"),
    ("--eps", "RECLAUNCH_EPS", float, 1e-8, "optimizer epsilon (adagrad, rowwise_adagrad, adam)"),
    ("--betas", "RECLAUNCH_BETAS", _floats, [0.9, 0.999], "adam betas"),
    ("--grad-clip", "RECLAUNCH_GRAD_CLIP", float, 0.0, "clip the dense gradient norm to this (0 = off)"),
    ("--warmup-steps", "RECLAUNCH_WARMUP_STEPS", _int, 0, "linear LR warmup steps (DLRM reference LRPolicyScheduler)"),
    ("--decay-start", "RECLAUNCH_DECAY_START", _int, 0, "step the polynomial (power 2) LR decay starts (0 = no decay)"),
    ("--decay-steps", "RECLAUNCH_DECAY_STEPS", _int, 0, "steps the LR decays over, to 1e-7 x lr"),
    ("--pipeline", "RECLAUNCH_PIPELINE", str, "auto", "auto | sparse_dist | base | off: TorchRec train pipeline"),
    ("--qcomms", "RECLAUNCH_QCOMMS", str, "auto", "auto | off | fp16 | bf16: quantized embedding all-to-all (CUDA)"),
    ("--nccl-timeout-minutes", "RECLAUNCH_NCCL_TIMEOUT_MINUTES", float, 10.0, "collective timeout"),
    ("--checkpoint-async", "RECLAUNCH_CHECKPOINT_ASYNC", _bool, True, "periodic DCP saves in the background"),
    ("--reclaim-notice-seconds", "RECLAUNCH_RECLAIM_NOTICE_SECONDS", float, 0.0,
     "the spot reclaim notice: a save slower than this is a warning (0 = not spot / unknown)"),
]


# The values each option may take (the tests read the optimizers from here too).
CHOICES = {"model": ("deepfm", "dcnv2", "dlrm", "din"), "engine": ("torchrec", "ddp"),
           "precision": ("fp32", "tf32", "bf16", "fp16"),
           "optimizer": ("sgd", "adagrad", "rowwise_adagrad", "adam"),
           "dataset": ("auto", "synthetic", "files"),
           "embedding_dtype": ("fp32", "fp16", "bf16"), "pipeline": ("auto", "sparse_dist", "base", "off"),
           "qcomms": ("auto", "off", "fp16", "bf16")}


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
    for key, allowed in CHOICES.items():
        if getattr(args, key) not in allowed:
            parser.error(f"--{key.replace('_', '-')}: {getattr(args, key)!r} is not one of {', '.join(allowed)}")
    if args.batch_size < 1 or args.grad_accum < 1 or args.steps < 0 or args.log_every < 1:
        parser.error("batch size, grad accumulation and log interval must be >= 1, steps >= 0")
    if args.decay_start and args.decay_start < args.warmup_steps:
        parser.error("--decay-start: the LR decay must start after the warmup ends (DLRM reference rule)")
    if len(args.betas) != 2 or min(args.grad_clip, args.weight_decay, args.eps) < 0:
        parser.error("--betas takes two numbers; --grad-clip, --weight-decay and --eps must be >= 0")
    return args
