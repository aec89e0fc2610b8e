"""DeepFM and DCNv2 over one fused EmbeddingBag.

All sparse tables live in ONE `nn.EmbeddingBag` weight; table t's id i is row
`offsets[t] + i`. One lookup kernel (and one backward, one optimizer tensor) replaces
26 per-table modules — on GPUs and CPUs alike, per-table launches dominate small-batch
recsys steps. `PerTableEmbedding` is the one-module-per-table baseline kept for the
benchmark and for the equivalence test.
"""
from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

NUM_DENSE = 13


class _GatherRows(torch.autograd.Function):
    @staticmethod
    def forward(ctx, weight: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(idx)
        ctx.rows = weight.shape[0]
        return weight.index_select(0, idx)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (idx,) = ctx.saved_tensors
        out = torch.zeros(ctx.rows, grad.shape[1], dtype=grad.dtype, device=grad.device)
        return out.index_add_(0, idx, grad), None


class FusedEmbeddingBag(nn.Module):
    """[B, T] int64 ids (one per table) -> [B, T, D] pooled embeddings, one weight for all tables."""

    cpu_fast_backward = True

    def __init__(self, table_rows: Sequence[int], dim: int, mode: str = "sum", pooling: Sequence[int] = ()):
        super().__init__()
        # Multi-hot (issue 22): table t takes pooling[t] ids per sample, [B, sum(pooling)] in,
        # pooled (summed) per table as the planner sized them; all 1 is the one-hot fast path.
        self.pooling = [max(1, int(p)) for p in pooling][:len(table_rows)]
        self.pooling += [1] * (len(table_rows) - len(self.pooling))
        rows = torch.tensor([int(r) for r in table_rows], dtype=torch.long)
        if (rows <= 0).any():
            raise ValueError(f"every table needs >= 1 row, got {list(table_rows)}")
        offsets = torch.cat([torch.zeros(1, dtype=torch.long), rows.cumsum(0)[:-1]])
        # Buffers, not state: they follow .to(device) but are derived from the config.
        self.register_buffer("rows", rows, persistent=False)
        self.register_buffer("offsets", offsets, persistent=False)
        self.table_rows = [int(r) for r in table_rows]
        self.dim = dim
        self.bag = nn.EmbeddingBag(int(rows.sum()), dim, mode=mode)
        nn.init.uniform_(self.bag.weight, -0.05, 0.05)
        if any(p > 1 for p in self.pooling):
            per = torch.tensor(self.pooling, dtype=torch.long)
            self.register_buffer("col_rows", rows.repeat_interleave(per), persistent=False)
            self.register_buffer("col_offsets", offsets.repeat_interleave(per), persistent=False)
            self.register_buffer("bag_starts", torch.cat([torch.zeros(1, dtype=torch.long), per.cumsum(0)[:-1]]),
                                 persistent=False)

    @property
    def weight(self) -> torch.Tensor:
        return self.bag.weight

    def flat_ids(self, ids: torch.Tensor) -> torch.Tensor:
        # Out-of-range ids (real data, hashed features) wrap within their own table
        # instead of silently reading the next table's rows.
        return torch.remainder(ids, self.rows) + self.offsets

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if hasattr(self, "col_rows"):
            b, width = ids.shape
            t = len(self.table_rows)
            flat = (torch.remainder(ids, self.col_rows) + self.col_offsets).reshape(-1)
            starts = (torch.arange(b, device=ids.device)[:, None] * width + self.bag_starts).reshape(-1)
            return self.bag(flat, starts).view(b, t, self.dim)
        b, t = ids.shape
        flat = self.flat_ids(ids).reshape(b * t)
        if self.cpu_fast_backward and not flat.is_cuda and torch.is_grad_enabled():
            # Same values as the bag (a sum over one id is that row); PyTorch's CPU
            # EmbeddingBag dense backward is ~2.5x slower than index_add on one big table.
            return _GatherRows.apply(self.bag.weight, flat).view(b, t, self.dim)
        return self.bag(flat.view(b * t, 1)).view(b, t, self.dim)  # one bag of one id per (sample, table)

    def table_weight(self, t: int) -> torch.Tensor:
        start = sum(self.table_rows[:t])
        return self.bag.weight[start:start + self.table_rows[t]]


class PerTableEmbedding(nn.Module):
    """Baseline: one nn.EmbeddingBag per table (what the fused module replaces)."""

    def __init__(self, table_rows: Sequence[int], dim: int, mode: str = "sum"):
        super().__init__()
        self.table_rows = [int(r) for r in table_rows]
        self.dim = dim
        self.bags = nn.ModuleList(nn.EmbeddingBag(r, dim, mode=mode) for r in self.table_rows)
        for bag in self.bags:
            nn.init.uniform_(bag.weight, -0.05, 0.05)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        outs = [bag(torch.remainder(ids[:, t:t + 1], r))
                for t, (bag, r) in enumerate(zip(self.bags, self.table_rows))]
        return torch.stack(outs, dim=1)

    @torch.no_grad()
    def copy_from_fused(self, fused: FusedEmbeddingBag) -> None:
        for t, bag in enumerate(self.bags):
            bag.weight.copy_(fused.table_weight(t))


def make_embedding(table_rows: Sequence[int], dim: int, fused: bool = True, pooling: Sequence[int] = ()) -> nn.Module:
    if any(int(p) > 1 for p in pooling):
        return FusedEmbeddingBag(table_rows, dim, pooling=pooling)   # multi-hot: the fused bag only
    return (FusedEmbeddingBag if fused else PerTableEmbedding)(table_rows, dim)


def mlp(in_dim: int, sizes: Sequence[int]) -> tuple[nn.Sequential, int]:
    layers: list[nn.Module] = []
    for size in sizes:
        layers += [nn.Linear(in_dim, size), nn.ReLU()]
        in_dim = size
    return nn.Sequential(*layers), in_dim


def fm_term(v: torch.Tensor) -> torch.Tensor:
    """FM second order, sum over field pairs of <v_i, v_j> = ((sum v)^2 - sum v^2) / 2 per
    dimension, in fp32 whatever the input: in bf16 (autocast, TBE bf16 output) the two big
    terms agree in their 8 significant bits and their difference is rounding noise. The
    difference is exact in fp32 for these magnitudes; the cost is one [B, F, D] cast."""
    v = v.float()
    s = v.sum(1)
    return 0.5 * (s * s - (v * v).sum(1)).sum(1)


class DeepFM(nn.Module):
    """first-order + FM second-order + deep MLP, summed into one logit.

    The 13 dense features enter as one extra FM field (a linear projection to D) and
    through their own first-order weights. The embedding carries D+1 columns: the last
    one is each id's first-order weight, so one lookup serves both terms.
    """

    def __init__(self, table_rows: Sequence[int], embedding_dim: int = 16,
                 mlp_sizes: Sequence[int] = (64, 32), num_dense: int = NUM_DENSE, fused: bool = True,
                 pooling: Sequence[int] = ()):
        super().__init__()
        self.dim = embedding_dim
        self.embedding = make_embedding(table_rows, embedding_dim + 1, fused, pooling)
        self.dense_first = nn.Linear(num_dense, 1)
        self.dense_embed = nn.Linear(num_dense, embedding_dim)
        fields = len(table_rows) + 1
        body, out = mlp(fields * embedding_dim, mlp_sizes)
        self.deep = nn.Sequential(body, nn.Linear(out, 1))

    def forward(self, dense: torch.Tensor, sparse: torch.Tensor) -> torch.Tensor:
        e = self.embedding(sparse)                                   # [B, T, D+1]
        first = e[..., -1].sum(1) + self.dense_first(dense).squeeze(-1)
        v = torch.cat([e[..., :-1], self.dense_embed(dense).unsqueeze(1)], dim=1)  # [B, F, D]
        fm = fm_term(v)
        deep = self.deep(v.flatten(1)).squeeze(-1)
        return first + fm + deep                                      # logits [B]


class CrossLayer(nn.Module):
    """DCNv2 cross: x_{l+1} = x0 * (W x_l + b) + x_l, W optionally low-rank U V."""

    def __init__(self, dim: int, rank: int = 0):
        super().__init__()
        if rank and rank < dim:
            self.proj = nn.Sequential(nn.Linear(dim, rank, bias=False), nn.Linear(rank, dim))
        else:
            self.proj = nn.Linear(dim, dim)

    def forward(self, x0: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return x0 * self.proj(x) + x


class DCNv2(nn.Module):
    """bottom MLP (dense -> D) ++ embeddings -> cross layers -> top MLP -> logit (stacked)."""

    def __init__(self, table_rows: Sequence[int], embedding_dim: int = 16,
                 mlp_sizes: Sequence[int] = (64, 32), bottom_mlp: Sequence[int] = (64,),
                 cross_layers: int = 3, cross_rank: int = 0, num_dense: int = NUM_DENSE,
                 fused: bool = True, pooling: Sequence[int] = ()):
        super().__init__()
        body, out = mlp(num_dense, bottom_mlp)
        self.bottom = nn.Sequential(body, nn.Linear(out, embedding_dim), nn.ReLU())
        self.embedding = make_embedding(table_rows, embedding_dim, fused, pooling)
        width = (len(table_rows) + 1) * embedding_dim
        self.cross = nn.ModuleList(CrossLayer(width, cross_rank) for _ in range(cross_layers))
        top, out = mlp(width, mlp_sizes)
        self.top = nn.Sequential(top, nn.Linear(out, 1))

    def forward(self, dense: torch.Tensor, sparse: torch.Tensor) -> torch.Tensor:
        x0 = torch.cat([self.bottom(dense).unsqueeze(1), self.embedding(sparse)], dim=1).flatten(1)
        x = x0
        for layer in self.cross:
            x = layer(x0, x)
        return self.top(x).squeeze(-1)


def build_model(name: str, table_rows: Sequence[int], embedding_dim: int, mlp_sizes: Sequence[int],
                bottom_mlp: Sequence[int] = (64,), cross_layers: int = 3, cross_rank: int = 0,
                fused: bool = True, pooling: Sequence[int] = (), history: int = 0,
                attention_mlp: Sequence[int] = (80, 40)) -> nn.Module:
    if name == "deepfm":
        return DeepFM(table_rows, embedding_dim, mlp_sizes, fused=fused, pooling=pooling)
    if name == "dcnv2":
        return DCNv2(table_rows, embedding_dim, mlp_sizes, bottom_mlp, cross_layers, cross_rank, fused=fused,
                     pooling=pooling)
    if name in ("dlrm", "din"):
        import model_extra   # plain-torch DLRM and DIN (the ddp engine; TorchRec's are in rec_model)
        return model_extra.build(name, table_rows, embedding_dim, mlp_sizes, bottom_mlp, pooling, history,
                                 attention_mlp)
    raise ValueError(f"unknown model {name!r}: expected deepfm, dcnv2, dlrm or din")

