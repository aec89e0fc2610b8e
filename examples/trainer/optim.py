"""Optimizers for recsys: dense math on the MLPs, row-sparse math on the embedding.

A step touches only the embedding rows its batch looked up (a few thousand of ~10^5..10^9),
so the embedding group updates just the rows whose (all-reduced) gradient is non-zero,
like FBGEMM's fused sparse optimizers and torch.optim.SparseAdam. For SGD and Adagrad this
is exactly the dense result, only cheaper; for Adam it is "lazy Adam" (moments of rows not
seen this step are not decayed), the behaviour TorchRec/FBGEMM users expect. Gradients stay
dense, so DDP all-reduces them on gloo and NCCL alike.
"""
from __future__ import annotations

from typing import Iterable

import torch
from torch import nn

DEFAULT_LR = {"sgd": 0.1, "adagrad": 0.05, "rowwise_adagrad": 0.05, "adam": 3e-3}


class RecsysOptimizer(torch.optim.Optimizer):
    """kind: sgd | adagrad | rowwise_adagrad | adam.

    Group flags: rows=True -> update only rows with a non-zero gradient (the embedding);
    rowwise=True -> Adagrad keeps ONE accumulator per row (mean of squared grads): the
    1/dim optimizer memory the planner assumes for row-wise Adagrad.
    """

    def __init__(self, params: Iterable, kind: str, lr: float, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0):
        if kind not in DEFAULT_LR:
            raise ValueError(f"unknown optimizer {kind!r}: expected one of {sorted(DEFAULT_LR)}")
        super().__init__(params, dict(kind=kind, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      rows=False, rowwise=False))

    @torch.no_grad()
    def init_state(self) -> None:
        """Create every state tensor now (zeros, step 0), as a checkpoint load in place needs:
        a row-sparse group with zero gradients would otherwise create none."""
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if group["kind"] in ("adagrad", "rowwise_adagrad") and "sum" not in state:
                    rowwise = group["kind"] == "rowwise_adagrad" and group["rowwise"] and p.dim() == 2
                    state["sum"] = torch.zeros((p.shape[0], 1) if rowwise else p.shape, dtype=p.dtype, device=p.device)
                elif group["kind"] == "adam" and "exp_avg" not in state:
                    state["step"] = torch.zeros((), dtype=torch.float32)
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                idx = None
                grad = p.grad
                if group["rows"] and p.dim() == 2:
                    idx = grad.ne(0).any(dim=1).nonzero().squeeze(1)
                    if idx.numel() == 0:
                        continue
                    grad = grad.index_select(0, idx)
                if group.get("weight_decay"):   # L2 as torch.optim / FBGEMM: on the rows updated
                    grad = grad.add(p if idx is None else p.index_select(0, idx), alpha=group["weight_decay"])
                self._update(group, p, grad, idx)
        return loss

    def _update(self, group, p, grad, idx) -> None:
        kind, lr, eps = group["kind"], group["lr"], group["eps"]
        state = self.state[p]

        def rows(name: str, width: int | None = None) -> torch.Tensor:
            """State tensor `name`, restricted to the updated rows (written back by _put)."""
            if name not in state:
                shape = (p.shape[0], width) if width else p.shape
                state[name] = torch.zeros(shape, dtype=p.dtype, device=p.device)
            return state[name] if idx is None else state[name].index_select(0, idx)

        def put(name: str, value: torch.Tensor) -> None:
            if idx is None:
                state[name].copy_(value)
            else:
                state[name].index_copy_(0, idx, value)

        if kind == "sgd":
            delta = grad * lr
        elif kind in ("adagrad", "rowwise_adagrad"):
            rowwise = kind == "rowwise_adagrad" and group["rowwise"] and p.dim() == 2
            acc = rows("sum", 1 if rowwise else None)
            acc = acc + (grad.pow(2).mean(dim=1, keepdim=True) if rowwise else grad * grad)
            put("sum", acc)
            delta = grad * lr / (acc.sqrt() + eps)
        else:  # adam
            b1, b2 = group["betas"]
            state["step"] = state.get("step", 0) + 1   # a tensor after init_state()
            m = rows("exp_avg").mul_(b1).add_(grad, alpha=1 - b1)
            v = rows("exp_avg_sq").mul_(b2).addcmul_(grad, grad, value=1 - b2)
            put("exp_avg", m)
            put("exp_avg_sq", v)
            t = float(state["step"])
            delta = (m / (1 - b1 ** t)) * lr / ((v / (1 - b2 ** t)).sqrt() + eps)
        if idx is None:
            p.sub_(delta)
        else:
            p.index_add_(0, idx, delta, alpha=-1)


def build_optimizer(name: str, model: nn.Module, lr: float | None = None, **kwargs) -> RecsysOptimizer:
    if name not in DEFAULT_LR:
        raise ValueError(f"unknown optimizer {name!r}: expected one of {sorted(DEFAULT_LR)}")
    emb = list(model.embedding.parameters())
    emb_ids = {id(p) for p in emb}
    dense = [p for p in model.parameters() if id(p) not in emb_ids]
    groups = [{"params": emb, "rows": True, "rowwise": True}, {"params": dense}]
    return RecsysOptimizer(groups, name, DEFAULT_LR[name] if lr is None else lr, **kwargs)
