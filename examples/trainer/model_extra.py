"""DLRM and DIN in plain PyTorch, for `--engine ddp` (every table replicated, no TorchRec).

They mirror rec_model.py's TorchRec versions so a machine without fbgemm/torchrec (a bare
CUDA image: bench/gpu_check.sh) can run all four presets:
- DLRM (Naumov et al. 2019; torchrec.models.dlrm.DLRM): bottom MLP to the table dim, pairwise
  dot products of the T+1 vectors (upper triangle), top MLP over [dense, interactions];
- DIN (Zhou et al., KDD 2018): the last table is the behaviour sequence; a local activation
  unit weighs each history item against the candidate (no softmax, as in the paper).
Pooled tables go through model.FusedEmbeddingBag (multi-hot aware) so the row-sparse optimizer
(optim.py) sees them as the `embedding` group, the sequence table included.
"""
from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from model import NUM_DENSE, FusedEmbeddingBag, mlp


class DLRM(nn.Module):
    def __init__(self, table_rows: Sequence[int], dim: int, mlp_sizes: Sequence[int],
                 bottom_mlp: Sequence[int], pooling: Sequence[int] = ()):
        super().__init__()
        body, out = mlp(NUM_DENSE, bottom_mlp)
        self.bottom = nn.Sequential(body, nn.Linear(out, dim), nn.ReLU())
        self.embedding = FusedEmbeddingBag(table_rows, dim, pooling=pooling)
        f = len(table_rows) + 1
        self.register_buffer("triu", torch.triu_indices(f, f, offset=1), persistent=False)
        top, out = mlp(dim + f * (f - 1) // 2, mlp_sizes)
        self.top = nn.Sequential(top, nn.Linear(out, 1))

    def forward(self, dense: torch.Tensor, sparse: torch.Tensor) -> torch.Tensor:
        x = self.bottom(dense)
        v = torch.cat([x.unsqueeze(1), self.embedding(sparse)], 1)          # [B, F, D]
        inter = torch.bmm(v, v.transpose(1, 2))[:, self.triu[0], self.triu[1]]
        return self.top(torch.cat([x, inter], 1)).squeeze(-1)


class _Embeddings(nn.Module):
    def __init__(self, pooled, seq):
        super().__init__()
        self.pooled, self.seq = pooled, seq


class DIN(nn.Module):
    def __init__(self, table_rows: Sequence[int], dim: int, mlp_sizes: Sequence[int], history: int,
                 attention_mlp: Sequence[int] = (80, 40), pooling: Sequence[int] = ()):
        super().__init__()
        if len(table_rows) < 2 or history < 1:
            raise ValueError("din needs >= 1 pooled table plus the behaviour table (last) and a history length")
        seq = nn.Embedding(int(table_rows[-1]), dim)
        nn.init.uniform_(seq.weight, -0.05, 0.05)
        self.embedding = _Embeddings(FusedEmbeddingBag(table_rows[:-1], dim, pooling=pooling), seq)
        self.history = history
        att, out = mlp(4 * dim, list(attention_mlp) or [80, 40])
        self.attention = nn.Sequential(att, nn.Linear(out, 1))
        top, out = mlp(NUM_DENSE + (len(table_rows) - 1) * dim + 2 * dim, mlp_sizes)
        self.top = nn.Sequential(top, nn.Linear(out, 1))
        self.seq_rows = int(table_rows[-1])

    def forward(self, dense, sparse, seq_ids, seq_lens, targets) -> torch.Tensor:
        b = dense.shape[0]
        pooled = self.embedding.pooled(sparse).reshape(b, -1)
        ids = torch.remainder(seq_ids[0][:, :self.history], self.seq_rows)    # [B, L]
        hist = self.embedding.seq(ids)                                        # [B, L, D]
        mask = (torch.arange(ids.shape[1], device=ids.device)[None, :] < seq_lens[0][:, None]).unsqueeze(-1)
        t = self.embedding.seq(torch.remainder(targets[0], self.seq_rows))    # [B, D]
        te = t.unsqueeze(1).expand_as(hist)
        w = self.attention(torch.cat([hist, te, hist - te, hist * te], -1)) * mask
        return self.top(torch.cat([dense, pooled, (w * hist).sum(1), t], 1)).squeeze(-1)


def build(name: str, table_rows, dim, mlp_sizes, bottom_mlp, pooling, history, attention_mlp) -> nn.Module:
    if name == "dlrm":
        return DLRM(table_rows, dim, mlp_sizes, bottom_mlp, pooling)
    return DIN(table_rows, dim, mlp_sizes, history or 50, attention_mlp, pooling)
