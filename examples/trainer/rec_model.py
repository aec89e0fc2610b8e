"""DeepFM, DCNv2, DLRM and DIN over TorchRec embedding modules.

Every pooled table is one `EmbeddingBagConfig` in ONE `EmbeddingBagCollection` (module path
`sparse.ebc`); DIN's behaviour-sequence tables are `EmbeddingConfig`s in an
`EmbeddingCollection` (`sparse.ec`, unpooled: one vector per history item). Both are what
`DistributedModelParallel` shards by the plan (sharding.py); everything else is the dense
part DMP wraps in DDP. DLRM and DCNv2 are TorchRec's own `torchrec.models.dlrm.DLRM` /
`DLRM_DCN` (the MLPerf reference models); DeepFM and DIN are written here on TorchRec modules.
The sparse input is one `KeyedJaggedTensor`: one id per sample for each pooled feature, a
jagged id list per sequence feature, and one candidate id per sequence (`<feature>__target`,
looked up in the same table: DIN scores the candidate item against the items in the history).
"""
from __future__ import annotations

import contextlib
from typing import Sequence

import torch
from torch import nn
from torchrec.models.dlrm import DLRM, DLRM_DCN
from torchrec.modules.crossnet import CrossNet
from torchrec.datasets.utils import Batch
from torchrec.modules.embedding_configs import DataType, EmbeddingBagConfig, EmbeddingConfig, PoolingType
from torchrec.modules.embedding_modules import EmbeddingBagCollection, EmbeddingCollection
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

import data as data_mod
import precision
from model import fm_term
from sharding import TARGET_SUFFIX, Plan

NUM_DENSE = 13
MODELS = ("deepfm", "dcnv2", "dlrm", "din")


def _init_uniform(weight: torch.Tensor) -> None:
    nn.init.uniform_(weight, -0.05, 0.05)


def ebc_for(plan: Plan, device: torch.device, data_type=DataType.FP32) -> EmbeddingBagCollection | None:
    if not plan.pooled:
        return None
    return EmbeddingBagCollection(
        tables=[EmbeddingBagConfig(name=t.name, num_embeddings=t.rows, embedding_dim=t.dim,
                                   feature_names=[t.feature], pooling=PoolingType.SUM, data_type=data_type,
                                   init_fn=_init_uniform) for t in plan.pooled], device=device)


def ec_for(plan: Plan, device: torch.device, data_type=DataType.FP32) -> EmbeddingCollection | None:
    if not plan.sequences:
        return None
    dims = {t.dim for t in plan.sequences}
    if len(dims) != 1:
        raise ValueError(f"DIN sequence tables must share one dim (TorchRec EmbeddingCollection), got {sorted(dims)}")
    return EmbeddingCollection(
        tables=[EmbeddingConfig(name=t.name, num_embeddings=t.rows, embedding_dim=t.dim,
                                feature_names=t.features, data_type=data_type, init_fn=_init_uniform)
                for t in plan.sequences],
        device=device)


def mlp(in_dim: int, sizes: Sequence[int], last_linear: bool = True) -> tuple[nn.Sequential, int]:
    layers: list[nn.Module] = []
    for i, size in enumerate(sizes):
        layers.append(nn.Linear(in_dim, size))
        if not (last_linear and i == len(sizes) - 1):
            layers.append(nn.ReLU())
        in_dim = size
    return nn.Sequential(*layers), in_dim


class Sparse(nn.Module):
    """The sharded part: pooled EBC and (DIN) sequence EC, kept apart from the dense MLPs."""

    def __init__(self, ebc, ec):
        super().__init__()
        self.ebc, self.ec = ebc, ec


class DeepFM(nn.Module):
    """first order (linear over dense + pooled embeddings) + FM second order + deep MLP."""

    def __init__(self, plan: Plan, mlp_sizes: Sequence[int], device: torch.device, data_type=DataType.FP32):
        super().__init__()
        dims = {t.dim for t in plan.pooled}
        if len(dims) != 1 or plan.sequences:
            raise ValueError(f"deepfm needs pooled tables of one dim (FM interaction), got {sorted(dims)}")
        self.dim = dims.pop()
        self.sparse = Sparse(ebc_for(plan, device, data_type), None)
        n = len(plan.pooled)
        self.dense_embed = nn.Linear(NUM_DENSE, self.dim)
        self.first = nn.Linear(NUM_DENSE + n * self.dim, 1)
        body, _ = mlp((n + 1) * self.dim, [*mlp_sizes, 1])
        self.deep = body

    def forward(self, dense: torch.Tensor, kjt: KeyedJaggedTensor) -> torch.Tensor:
        pooled = self.sparse.ebc(kjt).values()                     # [B, n*D]
        b = dense.shape[0]
        v = torch.cat([pooled.view(b, -1, self.dim), self.dense_embed(dense).unsqueeze(1)], 1)  # [B, F, D]
        fm = fm_term(v)
        first = self.first(torch.cat([dense, pooled], 1)).squeeze(-1)
        return first + fm + self.deep(v.flatten(1)).squeeze(-1)


class DIN(nn.Module):
    """Deep Interest Network (Zhou et al., KDD 2018): local activation unit over the behaviour
    sequence. For each history item h and candidate t, an MLP on [h, t, h-t, h*t] gives a
    weight (no softmax, as in the paper); the weighted sum is the user's interest in t. Top
    MLP over [dense, pooled tables, interest, candidate]."""

    def __init__(self, plan: Plan, mlp_sizes: Sequence[int], attention_mlp: Sequence[int],
                 device: torch.device, data_type=DataType.FP32):
        super().__init__()
        if not plan.sequences:
            raise ValueError("din needs a behaviour-sequence table (\"sequence\": true in RECLAUNCH_SHARDING, "
                             "or --history-length > 0)")
        self.sparse = Sparse(ebc_for(plan, device, data_type), ec_for(plan, device, data_type))
        self.seq = [(t.feature, max(1, int(round(t.pooling_factor)))) for t in plan.sequences]
        d = plan.sequences[0].dim
        att, out = mlp(4 * d, list(attention_mlp) or [80, 40], last_linear=False)
        self.attention = nn.Sequential(att, nn.Linear(out, 1))
        width = NUM_DENSE + sum(t.dim for t in plan.pooled) + 2 * d * len(self.seq)
        self.top, _ = mlp(width, [*mlp_sizes, 1])

    def forward(self, dense: torch.Tensor, kjt: KeyedJaggedTensor) -> torch.Tensor:
        parts = [dense]
        if self.sparse.ebc is not None:
            parts.append(self.sparse.ebc(kjt).values())
        seqs = self.sparse.ec(kjt)                                 # feature -> JaggedTensor
        for feature, length in self.seq:
            hist_jt = seqs[feature]
            hist = hist_jt.to_padded_dense(desired_length=length)  # [B, L, D], zero padded
            mask = (torch.arange(length, device=dense.device)[None, :]
                    < hist_jt.lengths()[:, None]).unsqueeze(-1)    # [B, L, 1]
            target = seqs[feature + TARGET_SUFFIX].values().view(dense.shape[0], -1)  # [B, D]
            t = target.unsqueeze(1).expand_as(hist)
            w = self.attention(torch.cat([hist, t, hist - t, hist * t], -1)) * mask
            parts += [(w * hist).sum(1), target]
        return self.top(torch.cat(parts, 1)).squeeze(-1)


class _Logit(nn.Module):
    """TorchRec's DLRM / DLRM_DCN return [B, 1]; the loop wants [B]."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, dense, kjt):
        return self.inner(dense, kjt).squeeze(-1)


def build(name: str, plan: Plan, mlp_sizes: Sequence[int], bottom_mlp: Sequence[int],
          cross_layers: int, cross_rank: int, attention_mlp: Sequence[int], device: torch.device,
          data_type=DataType.FP32) -> nn.Module:
    """`device` is where the embedding modules are built (meta: DMP materialises the shards);
    the dense part is built on CPU and DMP moves it to the training device."""
    if name == "deepfm":
        return DeepFM(plan, mlp_sizes, device, data_type)
    if name == "din":
        return DIN(plan, mlp_sizes, attention_mlp, device, data_type)
    if name in ("dlrm", "dcnv2"):
        dims = {t.dim for t in plan.tables}
        if len(dims) != 1 or plan.sequences:
            raise ValueError(f"{name} needs pooled tables of one dim, got {sorted(dims)}")
        d = dims.pop()
        ebc = ebc_for(plan, device, data_type)
        bottom = [*bottom_mlp, d]                 # TorchRec DLRM: dense arch ends at the table dim
        over = [*mlp_sizes, 1] if not mlp_sizes or mlp_sizes[-1] != 1 else list(mlp_sizes)
        if name == "dlrm":
            return _Logit(DLRM(ebc, NUM_DENSE, bottom, over))
        width = (len(plan.tables) + 1) * d
        low_rank = 0 < cross_rank < width
        model = DLRM_DCN(ebc, NUM_DENSE, bottom, over, dcn_num_layers=cross_layers,
                         dcn_low_rank_dim=cross_rank if low_rank else 1)
        if not low_rank:
            # DLRM_DCN always builds a LowRankCrossNet (torchrec/models/dlrm.py); "full rank"
            # through it would be U V of rank = width, twice the FLOPs and parameters of one
            # width x width matrix, and not what the plan costs (planner/memory.py "cross").
            # TorchRec's own full-rank CrossNet takes its place (same x0 * (W x + b) + x).
            model.inter_arch.crossnet = CrossNet(in_features=width, num_layers=cross_layers)
        return _Logit(model)
    raise ValueError(f"unknown model {name!r}: expected one of {', '.join(MODELS)}")


def sparse_modules(model: nn.Module) -> dict[str, nn.Module]:
    """Fully qualified names of the EBC / EC to shard (DMP's plan is keyed by them)."""
    return {n: m for n, m in model.named_modules()
            if isinstance(m, (EmbeddingBagCollection, EmbeddingCollection))}


def to_kjt(plan: Plan, batch: Sequence[torch.Tensor]) -> KeyedJaggedTensor:
    """(dense, sparse [B,T], labels[, seq_ids [S,B,L], seq_lens [S,B], targets [S,B]]) -> one KJT.
    Ids are wrapped into their table (hashed real ids may exceed it). A pooled table with
    pooling_factor P gets P ids per sample (data.multi_hot: the MLPerf DLRM multi-hot scheme)."""
    sparse = batch[1]
    b = sparse.shape[0]
    keys, values, lengths = [], [], []
    for i, t in enumerate(plan.pooled):
        keys.append(t.feature)
        p = max(1, int(round(t.pooling_factor)))
        ids = torch.remainder(sparse[:, i], t.rows)
        values.append(ids if p == 1 else torch.from_numpy(data_mod.multi_hot(ids.numpy(), t.rows, p, i)).reshape(-1))
        lengths.append(torch.full((b,), p, dtype=torch.int64))
    if plan.sequences:
        seq_ids, seq_lens, targets = batch[3], batch[4], batch[5]
        for s, t in enumerate(plan.sequences):
            n = max(1, int(round(t.pooling_factor)))
            lens = seq_lens[s].clamp(max=n)
            mask = torch.arange(seq_ids.shape[2])[None, :] < lens[:, None]
            keys.append(t.feature)
            values.append(torch.remainder(seq_ids[s][mask], t.rows))
            lengths.append(lens)
            keys.append(t.feature + TARGET_SUFFIX)
            values.append(torch.remainder(targets[s], t.rows))
            lengths.append(torch.ones(b, dtype=torch.int64))
    return KeyedJaggedTensor.from_lengths_sync(keys=keys, values=torch.cat(values),
                                               lengths=torch.cat(lengths))


class ToBatch:
    """DataLoader-worker transform: the raw batch -> torchrec.datasets.utils.Batch (dense, KJT,
    labels), the input TorchRec's train pipelines copy (pinned, non_blocking) and input-dist."""

    def __init__(self, plan: Plan):
        self.plan = plan

    def __call__(self, batch) -> Batch:
        return Batch(dense_features=batch[0], sparse_features=to_kjt(self.plan, batch), labels=batch[2])


class TrainModule(nn.Module):
    """model(dense, kjt) -> (loss, (loss, logits, labels)), the DLRMTrain contract
    (torchrec.models.dlrm.DLRMTrain) TorchRec's train pipelines call with one Batch. The
    forward reads only batch attributes, so the pipeline's fx tracer finds the sharded
    modules' inputs and can run their input all-to-all a batch ahead. `autocast` wraps the
    dense math (bf16); `loss_hook` is the drill knob of metrics.Fault."""

    def __init__(self, model: nn.Module, grad_accum: int = 1, autocast=None):
        super().__init__()
        self.model = model
        self.grad_accum = grad_accum
        self.autocast = autocast
        self.loss_hook = None
        self.precision_state = None      # precision.observe() of the first forward

    def forward(self, batch: Batch):
        with self.autocast() if self.autocast is not None else contextlib.nullcontext():
            logits = self.model(batch.dense_features, batch.sparse_features)
            if self.precision_state is None and isinstance(logits, torch.Tensor):   # not an fx trace
                self.precision_state = precision.observe(logits, logits.device.type)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits.float(), batch.labels) / self.grad_accum
        if self.loss_hook is not None:
            loss = self.loss_hook(loss)
        return loss, (loss.detach(), logits.detach(), batch.labels)
