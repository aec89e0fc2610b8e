"""The environment every training process gets, on a cluster or on this machine.

One function so the PyTorchJob container (render) and `cloud: local` (torchrun here) can
never drift apart: the trainer in examples/trainer reads exactly these names.
Precedence, lowest first: reclaunch's settings, the plan's NCCL profile, the user's job.env.
"""

from __future__ import annotations

import json
import math
import posixpath
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan


def _csv(values) -> str:
    return ",".join(str(int(v)) for v in values)


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def total_steps(plan: "Plan") -> int:
    """Optimizer steps for dataset.samples x epochs at the planned world size."""
    job = plan.spec.job
    per_step = job.batch_size * job.grad_accumulation * max(1, plan.world_size)
    return max(1, math.ceil(job.dataset.samples * job.dataset.epochs / per_step))


def storage_paths(plan: "Plan", local_root: str | Path | None = None) -> tuple[str | None, str]:
    """-> (DATA_DIR, CHECKPOINT_DIR).

    On a cluster the storage is mounted at storage.mount_path and a relative checkpoint path
    lives on it. With `local_root` (cloud: local) the hostpath volume is `local_root/data`, a
    path under mount_path maps into it, and a relative checkpoint path is `local_root/<path>`.
    """
    from reclaunch.spec.buckets import is_url
    from reclaunch import clouds

    spec = plan.spec
    mount = spec.storage.mount_path
    has_storage = clouds.storage_kind(spec.storage.kind).mounted
    ckpt = spec.job.checkpoint.path
    if is_url(ckpt) or is_url(spec.job.dataset.path):
        # Object storage: the trainer opens the URLs through fsspec (examples/trainer/store.py).
        url_data = spec.job.dataset.path if is_url(spec.job.dataset.path) else None
        base, ckpt_dir = storage_paths(_without_urls(plan), local_root)
        return url_data or base, ckpt if is_url(ckpt) else ckpt_dir
    if local_root is None:
        data_dir = mount if has_storage else None
        if not posixpath.isabs(ckpt) and has_storage:
            ckpt = posixpath.join(mount, ckpt)
        if spec.job.dataset.path and data_dir:
            data_dir = posixpath.join(mount, spec.job.dataset.path)
        return data_dir, ckpt
    root = Path(local_root)
    data = root / "data"
    data_dir = str(data) if has_storage else None
    if spec.job.dataset.path and data_dir:
        data_dir = str(data / spec.job.dataset.path.lstrip("/"))
    if not posixpath.isabs(ckpt):
        ckpt_dir = root / ckpt
    elif has_storage and (ckpt == mount or ckpt.startswith(mount.rstrip("/") + "/")):
        ckpt_dir = data / posixpath.relpath(ckpt, mount)
    else:
        ckpt_dir = Path(ckpt)
    return data_dir, str(ckpt_dir)


def _without_urls(plan: "Plan"):
    """The plan with its URL paths cleared, for the file-system half of storage_paths."""
    from types import SimpleNamespace

    from reclaunch.spec.buckets import is_url

    job = plan.spec.job
    dataset = job.dataset.model_copy(update={"path": None}) if is_url(job.dataset.path) else job.dataset
    ckpt = job.checkpoint.model_copy(update={"path": "ckpt"}) if is_url(job.checkpoint.path) else job.checkpoint
    spec = plan.spec.model_copy(update={"job": job.model_copy(update={"dataset": dataset, "checkpoint": ckpt})})
    return SimpleNamespace(spec=spec)


def sharding_json(plan: "Plan", indent: int | None = None) -> str:
    """RECLAUNCH_SHARDING: compact JSON (or indented, for the plan ConfigMap)."""
    data = plan.sharding.contract() if plan.sharding is not None else None
    if indent is None:
        return json.dumps(data, separators=(",", ":"))
    return json.dumps(data, indent=indent)


def job_env(plan: "Plan", *, local_root: str | Path | None = None,
            nccl: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for each training process of `plan` (strings only, deterministic order).
    `nccl` replaces plan.nccl_env (a single-node pod drops the network's settings)."""
    spec = plan.spec
    job, model = spec.job, spec.model
    data_dir, ckpt_dir = storage_paths(plan, local_root)
    env: dict[str, str] = {
        "RECLAUNCH_CLUSTER": spec.name,
        "RECLAUNCH_MODEL": model.preset,
        "RECLAUNCH_BATCH_SIZE": str(job.batch_size),
        "RECLAUNCH_GRAD_ACCUM": str(job.grad_accumulation),
        "RECLAUNCH_PRECISION": job.precision,
        "RECLAUNCH_OPTIMIZER": job.optimizer,
        "RECLAUNCH_EMBEDDING_DIM": str(model.embedding_dim),
        "RECLAUNCH_TABLE_ROWS": _csv(t.rows for t in model.tables),
        "RECLAUNCH_MLP": _csv(model.mlp),
        "RECLAUNCH_STEPS": str(total_steps(plan)),
        "RECLAUNCH_NUM_WORKERS": str(job.num_workers if job.num_workers is not None
                                     else plan.dataloader_workers),
        "CHECKPOINT_DIR": ckpt_dir,
        "CHECKPOINT_EVERY_MINUTES": _num(job.checkpoint.every_minutes),
    }
    if getattr(plan, "sharding", None) is not None:
        # RECLAUNCH_SHARDING (examples/trainer/README.md, "The plan"): the per-table plan the trainer executes (TorchRec sharding types).
        env["RECLAUNCH_SHARDING"] = sharding_json(plan)
    if model.embedding_dtype != "fp32":   # the dtype the planner budgets the tables in (trainer: precision.py)
        env["RECLAUNCH_EMBEDDING_DTYPE"] = model.embedding_dtype
    if model.bottom_mlp:
        env["RECLAUNCH_BOTTOM_MLP"] = _csv(model.bottom_mlp)
    if model.cross_layers:
        env["RECLAUNCH_CROSS_LAYERS"] = str(model.cross_layers)
    if model.cross_low_rank:
        env["RECLAUNCH_CROSS_RANK"] = str(model.cross_low_rank)
    if model.attention_mlp:     # DIN (trainer: --attention-mlp / --history-length)
        env["RECLAUNCH_ATTENTION_MLP"] = _csv(model.attention_mlp)
    if model.history_length:
        env["RECLAUNCH_HISTORY_LENGTH"] = str(model.history_length)
    if data_dir:
        env["DATA_DIR"] = data_dir
    if notice := (getattr(plan, "constants", None) or {}).get("reclaim_notice_seconds"):
        env["RECLAUNCH_RECLAIM_NOTICE_SECONDS"] = str(notice)   # the trainer warns on slower saves
    env.update({k: str(v) for k, v in (plan.nccl_env if nccl is None else nccl).items()})
    for k, v in job.env.items():   # a {secret, key} reference is no value: secrets.py renders it
        if hasattr(v, "secret"):
            env.pop(k, None)
        else:
            env[k] = str(v)
    return env
