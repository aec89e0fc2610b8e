"""Optimizers for recsys: dense math on the MLPs, row-sparse math on the embedding.

A step touches only the embedding rows its batch looked up (a few thousand of ~10^5..10^9),
so the embedding group changes just the rows whose (all-reduced) gradient is non-zero, like
FBGEMM's fused sparse optimizers and torch.optim.SparseAdam. For SGD and Adagrad this is
exactly the dense result; for Adam it is "lazy Adam" (moments of rows not seen this step are
not decayed), the behaviour TorchRec/FBGEMM users expect. The rows are a mask on the device,
never a list on the host (no sync per step). Gradients stay dense, so DDP all-reduces them on
gloo and NCCL alike.
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
                grad, mask = p.grad, None
                if group["rows"] and p.dim() == 2:
                    # The rows the batch touched, as a device-side [rows, 1] mask. Selecting them
                    # (nonzero + index_select) would make the host wait for the GPU on every
                    # step for every table; a masked update over the table is one more pass of
                    # elementwise work, the cost of the dense update TorchRec gives its own
                    # data-parallel tables, and the stream keeps running (issue 39).
                    mask = grad.ne(0).any(dim=1, keepdim=True)
                if group.get("weight_decay"):   # L2 as torch.optim / FBGEMM: on the rows updated
                    decay = p * group["weight_decay"]
                    grad = grad.add(decay if mask is None else decay * mask)
                self._update(group, p, grad, mask)
        return loss

    def _update(self, group, p, grad, mask) -> None:
        kind, lr, eps = group["kind"], group["lr"], group["eps"]
        state = self.state[p]

        def buf(name: str, width: int | None = None) -> torch.Tensor:
            if name not in state:
                state[name] = torch.zeros((p.shape[0], width) if width else p.shape, dtype=p.dtype,
                                          device=p.device)
            return state[name]

        if kind == "sgd":
            delta = grad * lr                    # untouched rows: zero gradient, zero step
        elif kind in ("adagrad", "rowwise_adagrad"):
            rowwise = kind == "rowwise_adagrad" and group["rowwise"] and p.dim() == 2
            acc = buf("sum", 1 if rowwise else None)
            acc.add_(grad.pow(2).mean(dim=1, keepdim=True) if rowwise else grad * grad)
            delta = grad * lr / (acc.sqrt() + eps)
        else:  # adam; with a mask, "lazy": rows not touched keep their moments and weights
            b1, b2 = group["betas"]
            state["step"] = state.get("step", 0) + 1   # a tensor after init_state()
            m, v = buf("exp_avg"), buf("exp_avg_sq")
            if mask is None:
                m.mul_(b1).add_(grad, alpha=1 - b1)
                v.mul_(b2).addcmul_(grad, grad, value=1 - b2)
            else:
                m.copy_(torch.where(mask, m * b1 + grad * (1 - b1), m))
                v.copy_(torch.where(mask, v * b2 + grad * grad * (1 - b2), v))
            t = float(state["step"])
            delta = (m / (1 - b1 ** t)) * lr / ((v / (1 - b2 ** t)).sqrt() + eps)
            if mask is not None:
                delta = delta * mask
        p.sub_(delta)


def build_optimizer(name: str, model: nn.Module, lr: float | None = None, **kwargs) -> RecsysOptimizer:
    if name not in DEFAULT_LR:
        raise ValueError(f"unknown optimizer {name!r}: expected one of {sorted(DEFAULT_LR)}")
    emb = list(model.embedding.parameters())
    emb_ids = {id(p) for p in emb}
    dense = [p for p in model.parameters() if id(p) not in emb_ids]
    groups = [{"params": emb, "rows": True, "rowwise": True}, {"params": dense}]
    return RecsysOptimizer(groups, name, DEFAULT_LR[name] if lr is None else lr, **kwargs)
