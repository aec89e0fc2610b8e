"""Learning-rate schedule, optimizer arguments and gradient clipping, shared by both engines.

The schedule is the DLRM reference's (facebookresearch/dlrm torchrec_dlrm/lr_scheduler.py,
LRPolicyScheduler): linear warmup over `warmup_steps`, constant, then from `decay_start` a
polynomial (power 2) decay over `decay_steps` down to 1e-7, then frozen. It is applied by
writing `lr` into every param group of every optimizer, the fused TorchRec ones included
(their param groups' lr reaches FBGEMM's TBE at the next step), so one schedule drives the
embedding and the dense learning rates together.
"""
from __future__ import annotations

MIN_LR = 1e-7


def lr_scale(step: int, warmup: int, decay_start: int, decay_steps: int) -> float:
    """Scale of the base LR for optimizer step `step` (1-based, as _LRScheduler's _step_count)."""
    if warmup and step < warmup:
        return 1.0 - (warmup - step) / warmup
    if decay_steps and decay_start:
        if decay_start <= step < decay_start + decay_steps:
            return ((decay_steps - (step - decay_start)) / decay_steps) ** 2
        if step >= decay_start + decay_steps:
            return 0.0          # clamped to MIN_LR below: "frozen at last"
    return 1.0


def set_lr(optimizers, base: float, step: int, args) -> float:
    """Write the scheduled LR into every param group; -> the LR now in force."""
    scale = lr_scale(step, args.warmup_steps, args.decay_start, args.decay_steps)
    lr = base * scale if scale == 1.0 else max(MIN_LR, base * scale)
    for opt in optimizers:
        for group in opt.param_groups:
            group["lr"] = lr
    return lr


def torch_kwargs(name: str, lr: float, args) -> dict:
    """Arguments torch.optim.<name> (and TorchRec's RowWiseAdagrad) accept."""
    kw = {"lr": lr, "weight_decay": args.weight_decay}
    if name in ("adagrad", "rowwise_adagrad", "adam"):
        kw["eps"] = args.eps
    if name == "adam":
        kw["betas"] = tuple(args.betas)
    return kw


def fused_kwargs(name: str, lr: float, args) -> tuple[dict, dict]:
    """(kwargs for _apply_optimizer_in_backward, extra sharder fused_params).

    FBGEMM's TBE takes beta1/beta2 where torch.optim takes betas (torchrec/distributed/utils.py
    "kwargs accepted by fbgemm and canonical optimizers are different"): the betas travel as
    sharder fused_params, which TorchRec merges with the per-parameter optimizer kwargs."""
    kw = torch_kwargs(name, lr, args)
    betas = kw.pop("betas", None)
    extra = {"beta1": betas[0], "beta2": betas[1]} if betas else {}
    return kw, extra
