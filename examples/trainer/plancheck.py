"""The plan checked against what TorchRec and this GPU can do, BEFORE the model is built (issue 22).

Without it a bad plan fails deep inside DMP or FBGEMM: an HBM overflow is a CUDA OOM traceback
from a TBE allocation, a sharding type the module cannot take (EmbeddingCollection has no
table_row_wise) a KeyError in the sharder, and the job is restarted max_restarts times. Here
each table is checked against its sharder's own `sharding_types(device)` (the list TorchRec's
planner enumerates) and this rank's embedding memory against `torch.cuda.mem_get_info`, and a
refusal is ONE line (PlanError -> `error: ...`, exit 1 on every rank, no traceback).
Placement details TorchRec's sharding helpers do not honour are said once in the log.
"""
from __future__ import annotations

import math

import torch

from sharding import PlanError

DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}
# Optimizer state bytes per row and per element (FBGEMM keeps fp32 state): (per row, per element).
STATE_BYTES = {"sgd": (0, 0), "adagrad": (0, 4), "rowwise_adagrad": (4, 0), "adam": (0, 8)}
# What the dense part, activations, the all-to-all buffers and the CUDA context need beside the
# tables: a fixed reserve and a fraction of the device (TorchRec's planner keeps a similar
# margin: its default HBM cap reserves for the dense part and KJT/output buffers).
RESERVE_BYTES = 2 * 2**30
RESERVE_FRACTION = 0.10


def shard_rows(t, world: int, local: int) -> dict[int, int]:
    """rank -> rows of table t held there (column_wise: row-equivalents of the column slice)."""
    kind = t.sharding_type
    if kind == "data_parallel":
        return {r: t.rows for r in range(world)}
    if kind == "table_wise":
        return {t.ranks[0]: t.rows}
    if kind == "row_wise":
        per = math.ceil(t.rows / world)
        return {r: per for r in range(world)}
    if kind == "table_row_wise":
        host = (t.ranks[0] if t.ranks else 0) // max(local, 1)
        per = math.ceil(t.rows / max(local, 1))
        return {host * local + i: per for i in range(local)}
    ranks = t.ranks or list(range(world))       # column_wise
    return {r: math.ceil(t.rows / len(ranks)) for r in ranks}


def rank_bytes(tables, rank: int, world: int, local: int, optimizer: str, table_dtype: str) -> int:
    per_row, per_elem = STATE_BYTES[optimizer]
    total = 0
    for t in tables:
        rows = shard_rows(t, world, local).get(rank, 0)
        total += rows * (t.dim * (DTYPE_BYTES[table_dtype] + per_elem) + per_row)
    return total


def check(plan, sparse_modules: dict, sharders, device: torch.device, local: int, optimizer: str,
          table_dtype: str, log=print, free_bytes: int | None = None, rank: int | None = None) -> None:
    """Raise PlanError (one line) if the plan cannot run here; log what TorchRec will do differently.
    free_bytes/rank: for tests (default: torch.cuda.mem_get_info on CUDA, no memory check on CPU)."""
    import torch.distributed as dist

    world = plan.world_size if not dist.is_initialized() else dist.get_world_size()
    rank = (dist.get_rank() if dist.is_initialized() else 0) if rank is None else rank
    by_name = {t.name: t for t in plan.tables}
    for path, module in sparse_modules.items():
        sharder = next((s for s in sharders if isinstance(module, s.module_type)), None)
        if sharder is None:
            raise PlanError(f"{path}: no TorchRec sharder for {type(module).__name__}")
        allowed = sharder.sharding_types(device.type)
        configs = module.embedding_bag_configs() if hasattr(module, "embedding_bag_configs") \
            else module.embedding_configs()
        for c in configs:
            t = by_name[c.name]
            if t.sharding_type not in allowed:
                raise PlanError(f"table {t.name}: sharding_type {t.sharding_type} is not supported by "
                                f"{type(sharder).__name__} ({type(module).__name__}) on {device.type}; it "
                                f"supports {', '.join(allowed)}: re-plan (reclaunch plan) or pin the table's "
                                "sharding in the spec")
            if t.sharding_type == "row_wise" and t.ranks and sorted(t.ranks) != list(range(world)):
                log(f"info plan_note='table {t.name}: row_wise ranks {t.ranks} - TorchRec row_wise spans "
                    f"all {world} ranks'")
            if t.sharding_type == "table_row_wise" and t.compute_kernel != "fused":
                log(f"info plan_note='table {t.name}: table_row_wise takes the kernel TorchRec picks "
                    f"(fused under the in-backward optimizer), not {t.compute_kernel}'")
    if free_bytes is None:
        if device.type != "cuda":
            return
        free_bytes = torch.cuda.mem_get_info(device)[0]
        total = torch.cuda.mem_get_info(device)[1]
    else:
        total = free_bytes
    need = rank_bytes(plan.tables, rank, world, local, optimizer, table_dtype)
    usable = free_bytes - RESERVE_BYTES - RESERVE_FRACTION * total
    if need > usable:
        mine = sorted((t for t in plan.tables if shard_rows(t, world, local).get(rank)),
                      key=lambda t: -t.rows * t.dim)[:3]
        raise PlanError(f"rank {rank}: the plan puts {need / 2**30:.1f} GiB of {table_dtype} tables + {optimizer} "
                        f"state here (largest: {', '.join(t.name for t in mine)}), the device has "
                        f"{free_bytes / 2**30:.1f} GiB free ({usable / 2**30:.1f} GiB after the dense/activation "
                        "reserve): shard the big tables over more ranks (row_wise) or use more GPUs")
