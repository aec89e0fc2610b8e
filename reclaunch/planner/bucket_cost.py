"""What checkpoints in a bucket cost and take: storage GB-months, requests, write time. Pure.

Priced whenever job.checkpoint.path is a bucket URL (spec/buckets.py), whether the stack
creates the bucket (storage.kind: bucket) or the user names one: the checkpoints bill either
way. Prices are each target's own dated facts (CloudFacts.planner["bucket_prices"]); the
upload rate, part size and checkpoints kept are shared data (data/object_storage.yaml).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from reclaunch.planner.constants import constants, data_yaml
from reclaunch.planner.memory import dense_shape, fused_table_sizes, optimizer_state_bytes
from reclaunch.spec.buckets import is_url


@lru_cache(maxsize=1)
def data() -> dict[str, Any]:
    return data_yaml("object_storage.yaml")


@dataclass(frozen=True)
class CheckpointCost:
    """What checkpoints to the spec's bucket cost: size, write time, storage and requests."""

    bytes: int                  # one checkpoint: every table + optimizer state + dense model
    write_seconds: float        # one save across the cluster's nodes
    checkpoints: int            # saves over the job
    storage_usd: float          # keep-last-K checkpoints, GB-months over the job
    requests_usd: float         # PUTs (multipart parts, metadata, marker) + the resume's reads
    source: str
    as_of: str                  # the prices' date (the shared data's, for a target without prices)

    def to_json(self) -> dict[str, Any]:
        return {"bytes": self.bytes, "write_seconds": round(self.write_seconds, 1),
                "checkpoints": self.checkpoints, "storage_usd": round(self.storage_usd, 4),
                "requests_usd": round(self.requests_usd, 4), "source": self.source,
                "as_of": self.as_of}


def checkpoint_bytes(spec) -> int:
    """Tables with their optimizer state (DCP saves each shard once) + the dense model with
    its state (replicated, saved once)."""
    dense_w = dense_shape(spec.model).params * 4
    return int(sum(b for _, b in fused_table_sizes(spec)) + dense_w
               + optimizer_state_bytes(dense_w, spec.job.optimizer))


def checkpoint_cost(spec, cloud: str, nodes: int, world: int, hours: float) -> CheckpointCost | None:
    """None when checkpoints are on a file system (its own line item prices them)."""
    if not is_url(spec.job.checkpoint.path):
        return None
    d = data()
    p = constants()["bucket_prices"].get(cloud) or {"storage_usd_per_gb_month": 0.0, "write_usd_per_1000": 0.0,
                                   "read_usd_per_1000": 0.0, "source": f"no object-store prices for {cloud}"}
    size = checkpoint_bytes(spec)
    n = max(1, math.floor(hours * 60.0 / spec.job.checkpoint.every_minutes)) if hours > 0 else 0
    per_rank = size / max(1, world)
    puts = world * max(1, math.ceil(per_rank / d["part_bytes"])) + 3   # parts + .metadata, marker, LIST
    months = hours / (365.0 * 24.0 / 12.0)
    stored_gb = size * min(n, d["keep_checkpoints"]) / 1e9
    write_s = size / 1e9 / (float(d["write_gb_per_s_per_node"]) * max(1, nodes))
    reads = world * max(1, math.ceil(per_rank / d["part_bytes"]))      # one resume reads it back
    return CheckpointCost(
        bytes=size, write_seconds=write_s, checkpoints=n,
        storage_usd=stored_gb * float(p["storage_usd_per_gb_month"]) * months,
        requests_usd=(n * puts * float(p["write_usd_per_1000"]) + reads * float(p["read_usd_per_1000"])) / 1000.0,
        source=f"{str(p['source']).strip()}; write rate: {str(d['write_source']).strip()}",
        as_of=p.get("as_of", d["gathered"]))


def stall_hours(spec, cloud: str, nodes: int, world: int, train_hours: float) -> float:
    """Hours the periodic saves stop training: the reference trainer saves synchronously
    (TorchRec's ShardedTensor state cannot be staged for dcp.async_save, so its periodic DCP
    saves block the step loop; the ddp engine writes one file from rank 0 behind a barrier),
    one save every checkpoint.every_minutes of training. 0 where no write rate is known (a
    file system: its rate is not modelled yet)."""
    ck = checkpoint_cost(spec, cloud, nodes, world, train_hours)
    return ck.checkpoints * ck.write_seconds / 3600.0 if ck is not None else 0.0


def notice_warning(spec, cloud: str, ck: CheckpointCost) -> str | None:
    """A spot job whose SIGTERM save cannot finish within the cloud's reclaim notice."""
    notice = constants()["spot"]["reclaim_notice_seconds"].get(cloud)   # the cloud's facts
    if not spec.spot.enabled or notice is None or ck.write_seconds <= notice:
        return None
    return (f"a checkpoint to {spec.job.checkpoint.path} takes ~{ck.write_seconds:.0f} s "
            f"({ck.bytes / 1e9:.0f} GB), longer than {cloud}'s {notice} s spot notice: a reclaim "
            f"resumes from the last periodic checkpoint (up to {spec.job.checkpoint.every_minutes:g} "
            "min of work lost)")
