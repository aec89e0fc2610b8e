"""The plain-PyTorch engine (--engine ddp): every table replicated, one fused EmbeddingBag,
row-sparse optimizer (optim.py), DDP all-reduce of the dense gradients, single-file
checkpoints (checkpoint.py) that rank 0 writes and broadcasts on resume.

Why it stays: it needs nothing beyond torch (no fbgemm/torchrec build to match the CUDA and
torch versions of an image), it is the data-parallel baseline bench/bench_trainer.py
measures, it runs bf16/fp16 autocast, and its checkpoints need no shared filesystem.
It cannot shard a table: a model whose tables do not fit one device needs --engine torchrec.
"""
from __future__ import annotations

import contextlib

import torch
import torch.distributed as dist
import torch.nn.functional as F

import checkpoint
from metrics import CommClock
from model import build_model
from optim import build_optimizer


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


class DDPEngine:
    name = "ddp"

    def __init__(self, args, d, log):
        if args.model not in ("deepfm", "dcnv2"):
            raise SystemExit(f"--engine ddp runs deepfm and dcnv2; {args.model} needs --engine torchrec")
        self.args, self.d, self.log = args, d, log
        self.clock = CommClock()
        self.module = build_model(args.model, args.table_rows, args.embedding_dim, args.mlp, args.bottom_mlp,
                                  args.cross_layers, args.cross_rank, fused=args.fused_embedding).to(d.device)
        self.optimizer = build_optimizer(args.optimizer, self.module, args.lr)
        self.params = sum(p.numel() for p in self.module.parameters())
        self.ddp = d.world_size > 1
        self.model = self.module
        self.autocast, self.scaler = precision_setup(args.precision, d.device)
        self._micro = 0

    def describe(self) -> str:
        return "sharding=data_parallel (ddp engine: every table replicated)"

    def wrap(self) -> None:
        """DDP after restore: the wrapper broadcasts rank 0's (restored) weights at construction."""
        if self.ddp:
            self.model = torch.nn.parallel.DistributedDataParallel(
                self.module, device_ids=[self.d.device.index] if self.d.device.type == "cuda" else None)
            self.model.register_comm_hook(None, self.clock.ddp_hook(dist.group.WORLD))

    def prepare(self, batch):
        return tuple(t.to(self.d.device, non_blocking=True) for t in batch[:3])

    def forward_backward(self, batch, loss_hook=None) -> torch.Tensor:
        dense, sparse, labels = batch
        self._micro += 1
        sync = not self.ddp or self._micro % self.args.grad_accum == 0
        with (contextlib.nullcontext() if sync else self.model.no_sync()):
            with self.autocast():
                logits = self.model(dense, sparse)
            loss = F.binary_cross_entropy_with_logits(logits.float(), labels) / self.args.grad_accum
            if loss_hook:
                loss = loss_hook(loss)
            (self.scaler.scale(loss) if self.scaler else loss).backward()
        return loss.detach()

    def dense_grad_norm(self) -> float | None:
        grads = [p.grad.detach().float().norm() for p in self.module.parameters() if p.grad is not None]
        return float(torch.stack(grads).norm()) if grads else None

    def optimizer_step(self) -> None:
        if self.scaler:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    def save(self, directory: str, step: int, meta: dict, keep: int) -> str | None:
        path = None
        if self.d.is_main:
            state = {"step": step, "model": self.module.state_dict(), "optimizer": self.optimizer.state_dict(),
                     **meta}
            path = checkpoint.save(directory, step, state, keep=keep)
        if self.ddp:
            dist.barrier()
        return path

    def restore(self, directory: str, fingerprint: dict) -> tuple[int, dict, str | None]:
        """Rank 0 loads the newest valid checkpoint and ships it: ranks need not share a filesystem."""
        if self.d.is_main:
            checkpoint.remove_stale_tmp(directory)
        found = checkpoint.latest_valid(directory, log=self.log) if self.d.is_main else None
        state = found[2] if found else None
        if self.ddp:
            box = [state]
            dist.broadcast_object_list(box, src=0)
            state = box[0]
        if state is None:
            return 0, {}, None
        if state.get("config") != fingerprint:
            raise SystemExit(f"checkpoint in {directory} was written for {state.get('config')}, "
                             f"not {fingerprint}: use a fresh CHECKPOINT_DIR")
        self.module.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        return int(state["step"]), state.get("extras", {}), found[1] if found else "(from rank 0)"

    def checkpoint_meta(self) -> dict:
        return {}

    def list_checkpoints(self, directory: str):
        return checkpoint.list_checkpoints(directory)
