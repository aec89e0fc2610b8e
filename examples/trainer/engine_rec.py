"""The TorchRec engine: embeddings sharded by the plan under DistributedModelParallel.

- tables: one EmbeddingBagConfig per plan table (rec_model.py), sharded EXACTLY as the plan
  says (sharding.py -> TorchRec's construct_module_sharding_plan), never re-planned here;
- optimizer: the embedding optimizer is fused into the backward pass
  (torch.distributed.optim._apply_optimizer_in_backward, which TorchRec turns into FBGEMM's
  fused TBE update: rows are updated as their gradients are produced, no dense embedding
  gradient ever exists); the dense part (DDP-wrapped by DMP) has a KeyedOptimizerWrapper;
  both are one CombinedOptimizer, so one state_dict holds them;
- checkpoints: torch.distributed.checkpoint (dcp_ckpt.py), each rank writes its own shards.
"""
from __future__ import annotations

import logging
import os
import warnings

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.api import CheckpointException
from torch.distributed.optim import _apply_optimizer_in_backward
from torchrec.distributed.embedding import EmbeddingCollectionSharder
from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
from torchrec.distributed.model_parallel import DistributedModelParallel
from torchrec.distributed.train_pipeline import TrainPipelineBase, TrainPipelineSparseDist
from torchrec.distributed.types import ShardedModule, ShardingEnv, ShardingPlan
from torchrec.optim.clipping import GradientClipping, GradientClippingOptimizer
from torchrec.optim.keyed import CombinedOptimizer, KeyedOptimizerWrapper
from torchrec.optim.optimizers import in_backward_optimizer_filter
from torchrec.optim.rowwise_adagrad import RowWiseAdagrad

import dcp_ckpt
import plancheck
import precision
import rec_model
import schedule
import sharding
import timing
from metrics import CommClock
from optim import DEFAULT_LR, RecsysOptimizer

# (embedding optimizer, dense optimizer): FBGEMM's fused kernels implement these
# (torchrec/distributed/utils.py maps torch.optim classes to EmbOptimType).
OPTIMIZERS = {"sgd": (torch.optim.SGD, torch.optim.SGD),
              "adagrad": (torch.optim.Adagrad, torch.optim.Adagrad),
              "rowwise_adagrad": (RowWiseAdagrad, torch.optim.Adagrad),
              "adam": (torch.optim.Adam, torch.optim.Adam)}
CPU_FUSED = ("sgd", "adagrad", "rowwise_adagrad")

# Known, harmless noise on every rank and every start: TorchRec warns per table that a dense
# kernel has no cache to configure, and DDP that TorchRec still passes broadcast_buffers.
logging.getLogger("torchrec.distributed.utils").setLevel(logging.ERROR)
warnings.filterwarnings("ignore", message=".*broadcast_buffers.*is deprecated", category=FutureWarning)


class RecEngine:
    name = "torchrec"

    def __init__(self, args, d, plan: sharding.Plan, log):
        self.args, self.d, self.log = args, d, log
        self.clock = CommClock(d.device.type == "cuda")
        self.prec = precision.resolve(args.precision, args.embedding_dtype, "torchrec", d.device.type, args.qcomms)
        self.plan = sharding.for_world(plan, d.world_size, d.device.type)
        if d.device.type != "cuda" and args.optimizer not in CPU_FUSED:
            # fbgemm's CPU TBE fuses sgd/adagrad/rowwise_adagrad only
            # (fbgemm_gpu/split_table_batched_embeddings_ops_training.py, "not supported in CPU mode"):
            # TorchRec's dense kernel instead, whose optimizer steps with the others after backward
            # (dense table gradient: right for the small local tables, not for big ones).
            # DIN's sequence tables cannot (see sharding.for_cpu_sequences, which says so).
            self.plan.tables = [t if t.sequence else sharding.Table(**{**t.__dict__, "compute_kernel": "dense"})
                                for t in self.plan.tables]
            self.plan.notes.append(f"fused {args.optimizer} needs CUDA on fbgemm: dense kernel, "
                                   "embedding optimizer steps after backward")
        self.plan = sharding.for_cpu_sequences(self.plan, d.device.type, args.optimizer in CPU_FUSED)
        for note in self.plan.notes + self.prec.notes:
            log(f"info sharding_note={note!r}")
        emb_cls, dense_cls = OPTIMIZERS[args.optimizer]
        self.base_lr = lr = DEFAULT_LR[args.optimizer] if args.lr is None else args.lr
        emb_kwargs, fused_extra = schedule.fused_kwargs(args.optimizer, lr, args)
        kw = precision.sharder_kwargs(self.prec, fused_extra, nccl=d.device.type == "cuda")
        sharders = [EmbeddingBagCollectionSharder(**kw), EmbeddingCollectionSharder(**kw)]
        # The sparse part is built on the meta device: DMP materialises each shard where the
        # plan puts it, so no rank ever allocates a whole table it does not own.
        inner = rec_model.build(args.model, self.plan, args.mlp, args.bottom_mlp, args.cross_layers,
                                args.cross_rank, args.attention_mlp, torch.device("meta"),
                                precision.torchrec_data_type(self.prec.table_dtype))
        model = rec_model.TrainModule(inner, args.grad_accum,
                                      self.prec.autocast if self.prec.autocast_dtype is not None else None)
        sparse = rec_model.sparse_modules(model)
        for m in sparse.values():
            _apply_optimizer_in_backward(emb_cls, m.parameters(), emb_kwargs)
        local = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
        plancheck.check(self.plan, sparse, sharders, d.device, local, args.optimizer,
                        self.prec.table_dtype, log=log)
        by_name = {t.name: t for t in self.plan.tables}
        module_plans = {}
        for path, m in sparse.items():
            names = [c.name for c in (m.embedding_bag_configs() if hasattr(m, "embedding_bag_configs")
                                      else m.embedding_configs())]
            module_plans[path] = sharding.module_plan(m, [by_name[n] for n in names], d.world_size,
                                                      local, d.device.type)
        self.sharding_plan = ShardingPlan(plan=module_plans)
        env = ShardingEnv.from_process_group(dist.group.WORLD)
        self.model = DistributedModelParallel(model, env=env, device=d.device, plan=self.sharding_plan,
                                              sharders=sharders)
        self.train_module = self.model.module
        for m in self.model.modules():
            if isinstance(m, ShardedModule):
                self.clock.instrument(m)
        ddp = self.model._dmp_wrapped_module
        if isinstance(ddp, torch.nn.parallel.DistributedDataParallel):
            ddp.register_comm_hook(None, self.clock.ddp_hook(ddp.process_group))
        self.optimizer = CombinedOptimizer([self.model.fused_optimizer, *self._dense_optimizers(dense_cls, lr)])
        self.params = sum(t.rows * t.dim for t in self.plan.tables) + sum(
            p.numel() for _, p in in_backward_optimizer_filter(self.model.named_parameters()))
        self.pipeline = self._make_pipeline()

    def _dense_optimizers(self, dense_cls, lr: float) -> list:
        """The non-fused parameters: the MLPs under dense_cls (clipped by --grad-clip, as
        TorchRec's GradientClippingOptimizer does), and data-parallel tables under the row-sparse
        update of optim.py (a DP table's all-reduced gradient is zero but for the rows the batch
        touched: full Adam/Adagrad over the whole table every step would be wasted work)."""
        mlp, tables = {}, {}
        for name, p in in_backward_optimizer_filter(self.model.named_parameters()):
            parts = name.split(".")
            is_table = len(parts) >= 3 and parts[-3] in ("embedding_bags", "embeddings") and p.dim() == 2
            (tables if is_table else mlp)[name] = p
        out = []
        if mlp:
            opt = KeyedOptimizerWrapper(mlp, lambda ps: dense_cls(ps, **schedule.torch_kwargs(self.args.optimizer,
                                                                                              lr, self.args)))
            if self.args.grad_clip > 0:
                opt = GradientClippingOptimizer(opt, clipping=GradientClipping.NORM, max_gradient=self.args.grad_clip)
            out.append(opt)
        self.row_sparse = []
        if tables:
            kw = schedule.torch_kwargs(self.args.optimizer, lr, self.args)

            def make(ps):
                opt = RecsysOptimizer([{"params": ps, "rows": True, "rowwise": True}], self.args.optimizer, lr,
                                      betas=kw.get("betas", (0.9, 0.999)), eps=kw.get("eps", 1e-8),
                                      weight_decay=self.args.weight_decay)
                self.row_sparse.append(opt)
                return opt
            out.append(KeyedOptimizerWrapper(tables, make))
        self.dp_tables = sorted(tables)
        return out

    def _make_pipeline(self):
        """TorchRec's TrainPipelineSparseDist (batch i+1's input all-to-all and batch i+2's
        host-to-device copy overlap batch i's forward/backward; CUDA streams on GPU, the same
        stage order on CPU), or TrainPipelineBase (copy overlap only). Gradient accumulation
        needs several backward passes per optimizer step, which the pipelines do not do: the
        plain loop then."""
        kind = self.args.pipeline
        if kind == "off" or (kind == "auto" and self.args.grad_accum > 1):
            return None
        if self.args.grad_accum > 1:
            raise SystemExit(f"error: --pipeline {kind} steps the optimizer every batch; "
                             f"--grad-accum {self.args.grad_accum} needs --pipeline off")
        cls = TrainPipelineBase if kind == "base" else TrainPipelineSparseDist
        self.pipeline_kind = cls.__name__
        self.marked = timing.MarkedOptimizer(self.optimizer)   # the loop gives it its clock
        return cls(self.model, self.marked, self.d.device)

    def table_ranks(self) -> dict[str, tuple[str, list[int]]]:
        """table -> (sharding type, ranks) as DMP actually sharded it (read back from its plan)."""
        out = {}
        for module_plan in self.model.plan.plan.values():
            for name, ps in module_plan.items():
                out[name] = (ps.sharding_type, list(ps.ranks or []))
        return out

    def local_tables(self) -> tuple[list[str], list[str]]:
        """(tables with a shard on THIS rank, replicated tables), read from the sharded state."""
        sharded, replicated = [], []
        for key, value in self.model.state_dict().items():
            parts = key.split(".")
            if len(parts) < 3 or parts[-1] != "weight" or parts[-3] not in ("embedding_bags", "embeddings"):
                continue
            if hasattr(value, "local_shards"):          # ShardedTensor: table/row/column-wise
                if value.local_shards():
                    sharded.append(parts[-2])
            else:                                       # plain tensor: data-parallel replica
                replicated.append(parts[-2])
        return sorted(sharded), sorted(replicated)

    def describe(self) -> str:
        pipe = getattr(self, "pipeline_kind", None) if self.pipeline else "off"
        return (f"sharding={self.plan.source} plan={self.plan.summary()} {self.prec.describe()} "
                f"pipeline={pipe} row_sparse_tables={len(self.dp_tables)}")

    def transform(self):
        """Runs in the DataLoader workers: raw arrays -> torchrec Batch (KJT built off the training thread)."""
        return rec_model.ToBatch(self.plan)

    def prepare(self, batch):
        return batch.to(self.d.device, non_blocking=True)

    def forward_backward(self, batch, loss_hook=None) -> torch.Tensor:
        self.train_module.loss_hook = loss_hook
        loss, _ = self.model(batch)
        loss.backward()  # fused kernels update the embedding rows here (optimizer in backward)
        return loss.detach()

    def pipeline_step(self, batches, loss_hook=None) -> torch.Tensor:
        """One optimizer step through the pipeline (zero_grad, forward, backward, step inside)."""
        self.train_module.loss_hook = loss_hook
        loss, _, _ = self.pipeline.progress(batches)
        return loss

    @property
    def precision_state(self) -> str | None:
        return self.train_module.precision_state

    def optimizer_marks(self):
        """(clock mark before, after) the optimizer step of the last pipeline step, or None."""
        return self.marked.take()

    def set_lr(self, step: int) -> float:
        """The scheduled LR for optimizer step `step`, in force for this step's backward too.
        The embedding rows are updated INSIDE backward by FBGEMM's TBE, which reads the LR its
        fused optimizer last handed it (torchrec batched_embedding_kernel.py: the fused
        optimizer's zero_grad() and step() call set_learning_rate); handing it over only in
        the optimizer step after backward would apply each LR one step late, as the plain
        loop did (TorchRec's train pipelines call zero_grad before forward, so they did not)."""
        lr = schedule.set_lr([self.optimizer], self.base_lr, step, self.args)
        self.model.fused_optimizer.zero_grad()     # only the TBEs' LR: their grads are fused away
        return lr

    def dense_grad_norm(self) -> float | None:
        grads = [p.grad.detach().float().norm() for _, p in
                 in_backward_optimizer_filter(self.model.named_parameters()) if p.grad is not None]
        return float(torch.stack(grads).norm()) if grads else None

    def optimizer_step(self) -> None:
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    def state(self) -> dict:
        """What a checkpoint holds. SGD keeps no optimizer state: DCP then writes nothing under
        `optim`, and a load that asks for it fails on every rank ("Missing key in checkpoint
        state_dict: optim"), so the key is only there when the optimizer holds tensors."""
        state = {"model": self.model.state_dict()}
        optim = self.optimizer.state_dict()
        if _holds_tensors(optim):
            state["optim"] = optim
        return state

    def save(self, directory: str, step: int, meta: dict, keep: int, background: bool = False) -> str:
        path = dcp_ckpt.save(directory, step, self.state(), meta, keep, self.d.is_main, background)
        self.saved_async = dcp_ckpt.is_pending()
        return path

    def finish(self) -> None:
        dcp_ckpt.wait_pending()

    def checkpoint_bytes(self, path: str) -> int:
        return dcp_ckpt.written_bytes(path)

    def restore(self, directory: str, fingerprint: dict) -> tuple[int, dict, str | None]:
        """Load the newest checkpoint that verifies; one that verifies but cannot be loaded
        (its content is not what DCP wrote: a forged or damaged shard whose sizes and digests
        still match) is skipped with a warning for the next older one, on every rank alike
        (dcp.load raises on all ranks when any rank's read fails)."""
        found = dcp_ckpt.candidates(directory, self.d.is_main, self.log)
        if not found:
            return 0, {}, None
        for path, meta in found:
            if meta.get("config") != fingerprint:
                raise SystemExit(f"checkpoint {path} was written for {meta.get('config')}, not {fingerprint}: "
                                 "use a fresh CHECKPOINT_DIR")
        self._init_optimizer_state()
        for i, (path, meta) in enumerate(found):
            state = self.state()
            try:
                self._load(path, meta, state)
            except SystemExit:
                raise
            except (Exception, CheckpointException) as exc:   # DCP's is a BaseException
                if i + 1 == len(found):
                    raise SystemExit(f"error: no checkpoint in {directory} could be loaded; the last, {path}: "
                                     f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
                                     ) from None
                self.log(f"warn unloadable_checkpoint={path} reason={type(exc).__name__}:"
                         f"{(str(exc).splitlines() or [''])[0][:200]} falling_back_to={found[i + 1][0]}")
                continue
            self.model.load_state_dict(state["model"])
            if "optim" in state:
                self.optimizer.load_state_dict(state["optim"])
            return int(meta["step"]), meta.get("extras", {}), path
        return 0, {}, None   # pragma: no cover - the loop returns or raises

    def _init_optimizer_state(self) -> None:
        """Optimizer state is created lazily on the first step; DCP loads in place, so make it
        exist first: one step with zero gradients, as TorchRec's KeyedOptimizer.init_state,
        but only for parameters this rank holds (a table-wise table placed elsewhere is an
        empty tensor here; giving it state would clash with its owner's in the checkpoint)."""
        for p in self.optimizer.params.values():
            if p.requires_grad and p.numel() > 0:
                p.grad = torch.zeros_like(p)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        for opt in self.row_sparse:      # zero gradients create no row-sparse state: make it
            opt.init_state()

    def _load(self, path: str, meta: dict, state: dict) -> None:
        saved = meta.get("sharding") or {}
        now = {n: list(v) for n, v in self.table_ranks().items()}
        if meta.get("world_size") != self.d.world_size and saved != now:
            # DCP reshards ShardedTensors by their saved offsets; we still say so loudly.
            self.log(f"info resharding world_size={meta.get('world_size')}->{self.d.world_size} "
                     f"(DCP loads each table into its new placement)")
        try:
            dcp_ckpt.load(path, state)
        except (Exception, CheckpointException) as exc:
            if meta.get("world_size") != self.d.world_size:
                raise SystemExit(f"checkpoint {path} was written by {meta.get('world_size')} ranks and cannot be "
                                 f"resharded onto {self.d.world_size} ({type(exc).__name__}: {exc}); keep the "
                                 "world size fixed (the plan's elastic policy) or start a fresh CHECKPOINT_DIR")
            raise

    def wrap(self) -> None:  # DMP wrapped the dense part in DDP at construction
        pass

    def list_checkpoints(self, directory: str):
        return dcp_ckpt.list_checkpoints(directory)

    def checkpoint_meta(self) -> dict:
        return {"sharding": {n: list(v) for n, v in self.table_ranks().items()}}


def _holds_tensors(value) -> bool:
    """Whether a (nested) state dict holds any tensor or ShardedTensor, what DCP writes."""
    if torch.is_tensor(value) or hasattr(value, "local_shards"):
        return True
    if isinstance(value, dict):
        return any(_holds_tensors(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_tensors(v) for v in value)
    return False
