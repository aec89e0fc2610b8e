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
import data
import precision
import schedule
from metrics import CommClock
from model import build_model
from optim import build_optimizer


def precision_setup(name: str, device: torch.device):
    """-> (autocast context factory, GradScaler or None). CPU trains in plain fp32."""
    p = precision.resolve(name, "fp32", "ddp", device.type)
    return p.autocast, p.scaler


class DDPEngine:
    name = "ddp"

    def __init__(self, args, d, log, plan):
        """plan: sharding.Plan -- only its tables (rows, pooling, the DIN sequence) are used."""
        self.args, self.d, self.log = args, d, log
        self.clock = CommClock(d.device.type == "cuda")
        self.prec = precision.resolve(args.precision, args.embedding_dtype, "ddp", d.device.type)
        for note in self.prec.notes:
            log(f"info {note}")
        rows = [t.rows for t in plan.pooled] + [t.rows for t in plan.sequences[:1]]
        self.pooling = [max(1, int(round(t.pooling_factor))) for t in plan.pooled]
        self.pooled_rows = [t.rows for t in plan.pooled]
        history = max([int(round(t.pooling_factor)) for t in plan.sequences] or [0])
        if args.model == "din" and not plan.sequences:
            raise SystemExit("error: din needs a behaviour-sequence table (--history-length > 0)")
        if len({t.dim for t in plan.tables}) != 1:
            raise SystemExit("error: the ddp engine needs one embedding dim for every table")
        self.module = build_model(args.model, rows, plan.tables[0].dim, args.mlp, args.bottom_mlp,
                                  args.cross_layers, args.cross_rank, fused=args.fused_embedding,
                                  pooling=self.pooling, history=history,
                                  attention_mlp=args.attention_mlp).to(d.device)
        lr = schedule.torch_kwargs(args.optimizer, 0.0, args)
        self.optimizer = build_optimizer(args.optimizer, self.module, args.lr, betas=lr.get("betas", (0.9, 0.999)),
                                         eps=lr.get("eps", 1e-8), weight_decay=args.weight_decay)
        self.base_lr = self.optimizer.param_groups[0]["lr"]
        self.params = sum(p.numel() for p in self.module.parameters())
        self.ddp = d.world_size > 1
        self.model = self.module
        self.autocast, self.scaler = self.prec.autocast, self.prec.scaler
        self.sequence = args.model == "din"
        self._micro = 0
        self.precision_state = None      # precision.observe() of the first forward

    def transform(self):
        """Runs in the DataLoader workers: multi-hot ids for the pooled tables."""
        return data.MultiHot(self.pooled_rows, self.pooling) if any(p > 1 for p in self.pooling) else None

    def describe(self) -> str:
        return f"sharding=data_parallel (ddp engine: every table replicated) {self.prec.describe()}"

    def wrap(self) -> None:
        """DDP after restore: the wrapper broadcasts rank 0's (restored) weights at construction."""
        if self.ddp:
            self.model = torch.nn.parallel.DistributedDataParallel(
                self.module, device_ids=[self.d.device.index] if self.d.device.type == "cuda" else None)
            self.model.register_comm_hook(None, self.clock.ddp_hook(dist.group.WORLD))

    def prepare(self, batch):
        return tuple(t.to(self.d.device, non_blocking=True) for t in batch[:6 if self.sequence else 3])

    def forward_backward(self, batch, loss_hook=None) -> torch.Tensor:
        dense, sparse, labels = batch[:3]
        self._micro += 1
        sync = not self.ddp or self._micro % self.args.grad_accum == 0
        with (contextlib.nullcontext() if sync else self.model.no_sync()):
            with self.autocast():
                logits = self.model(dense, sparse, *batch[3:])
                if self.precision_state is None:
                    self.precision_state = precision.observe(logits, self.d.device.type)
            loss = F.binary_cross_entropy_with_logits(logits.float(), labels) / self.args.grad_accum
            if loss_hook:
                loss = loss_hook(loss)
            (self.scaler.scale(loss) if self.scaler else loss).backward()
        return loss.detach()

    def dense_grad_norm(self) -> float | None:
        grads = [p.grad.detach().float().norm() for p in self.module.parameters() if p.grad is not None]
        return float(torch.stack(grads).norm()) if grads else None

    def set_lr(self, step: int) -> float:
        return schedule.set_lr([self.optimizer], self.base_lr, step, self.args)

    def optimizer_step(self) -> None:
        if self.args.grad_clip > 0:   # the dense part; the row-sparse tables are not clipped (as TorchRec)
            if self.scaler:
                self.scaler.unscale_(self.optimizer)
            emb = {id(p) for p in self.module.embedding.parameters()}
            torch.nn.utils.clip_grad_norm_([p for p in self.module.parameters() if id(p) not in emb],
                                           self.args.grad_clip)
        if self.scaler:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    def finish(self) -> None:
        pass

    def checkpoint_bytes(self, path: str) -> int:
        return checkpoint.written_bytes(path)

    def save(self, directory: str, step: int, meta: dict, keep: int, background: bool = False) -> str | None:
        """background: ignored -- one rank writes one file (checkpoint.py), no sharded async save."""
        path = None
        if self.d.is_main:
            state = {"step": step, "model": self.module.state_dict(), "optimizer": self.optimizer.state_dict(),
                     **meta}
            path = checkpoint.save(directory, step, state, keep=keep)
        if self.ddp:
            dist.barrier()
        return path

    def restore(self, directory: str, fingerprint: dict) -> tuple[int, dict, str | None]:
        """Rank 0 loads the newest valid checkpoint and ships it: ranks need not share a
        filesystem. Only the small part travels pickled (step, config, extras, and a list of
        the optimizer state's tensors); the tensors go by broadcast, in place, as the weights
        do when DDP wraps the module (wrap(), after this). Pickling the whole state through
        broadcast_object_list would copy gigabytes through host memory for large tables."""
        if self.d.is_main:
            checkpoint.remove_stale_tmp(directory)
        found = checkpoint.latest_valid(directory, log=self.log) if self.d.is_main else None
        head = None if found is None else {
            "path": found[1], **{k: v for k, v in found[2].items() if k not in ("model", "optimizer")}}
        if self.ddp:
            box = [head]
            dist.broadcast_object_list(box, src=0)
            head = box[0]
        if head is None:
            return 0, {}, None
        if head.get("config") != fingerprint:
            raise SystemExit(f"checkpoint in {directory} was written for {head.get('config')}, "
                             f"not {fingerprint}: use a fresh CHECKPOINT_DIR")
        if self.d.is_main:
            self.module.load_state_dict(found[2]["model"])
            self.optimizer.load_state_dict(found[2]["optimizer"])
        if self.ddp:
            self._share_optimizer_state()
        return int(head["step"]), head.get("extras", {}), head["path"] if self.d.is_main else "(from rank 0)"

    def _share_optimizer_state(self) -> None:
        """Rank 0's optimizer state on every rank: a list of (param, key, shape, dtype, where)
        and the plain numbers pickled, each tensor broadcast on the training device."""
        params = [p for g in self.optimizer.param_groups for p in g["params"]]
        layout = None
        if self.d.is_main:
            layout = [(i, k, (tuple(v.shape), str(v.dtype).replace("torch.", ""), v.device.type)
                       if torch.is_tensor(v) else v)
                      for i, p in enumerate(params) for k, v in sorted(self.optimizer.state[p].items())]
        box = [layout]
        dist.broadcast_object_list(box, src=0)
        for i, key, what in box[0]:
            state = self.optimizer.state[params[i]]
            if not isinstance(what, tuple):              # a plain number (Adam's step count)
                state[key] = what
                continue
            shape, dtype, where = what
            mine = state.get(key) if self.d.is_main else None
            buf = mine.to(self.d.device) if mine is not None else torch.empty(
                shape, dtype=getattr(torch, dtype), device=self.d.device)
            dist.broadcast(buf, src=0)
            state[key] = buf if where != "cpu" else buf.cpu()

    def checkpoint_meta(self) -> dict:
        return {}

    def list_checkpoints(self, directory: str):
        return checkpoint.list_checkpoints(directory)
