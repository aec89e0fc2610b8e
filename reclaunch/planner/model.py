"""The Plan: everything downstream (render, stacks, providers, CLI) reads from this.

Pure data. `Plan.to_json()` is the `reclaunch plan --json` contract in design.md.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.catalog import Offer
    from reclaunch.spec import Spec


# eq=False, repr=False: nothing compares these by value or prints them, and each generated
# method is one more exec at import, which `plan` pays on every start (issue 25).
@dataclass(eq=False, repr=False)
class Memory:
    """Memory per GPU after sharding, and whether it fits (the `memory` of plan --json)."""

    embedding_bytes: int            # per GPU, after sharding
    dense_bytes: int
    gradient_bytes: int
    optimizer_bytes: int
    activation_bytes: int
    reserve_bytes: int              # what TorchRec-style planners keep back
    total_bytes_per_gpu: int
    capacity_bytes_per_gpu: int
    fits: bool
    parallelism: str                # "data" | "model"
    gpus_needed: int                # the fewest GPUs the model fits on
    sharding: dict[str, str] = field(default_factory=dict)   # table -> data_parallel|table_wise|row_wise
    total_embedding_bytes: int = 0  # all tables, unsharded


@dataclass(eq=False, repr=False)
class TableShard:
    """One table's sharding: the contract-1 entry (reclaunch.manifests.env RECLAUNCH_SHARDING)."""

    name: str
    rows: int
    dim: int
    pooling_factor: float
    feature: str
    sequence: bool
    sharding_type: str              # data_parallel|table_wise|row_wise|column_wise|table_row_wise
    compute_kernel: str             # fused | dense (TorchRec EmbeddingComputeKernel values)
    ranks: list[int]
    pinned: bool = False            # the spec fixed the type
    memory_bytes_per_rank: float = 0.0   # weights + optimizer state (+ grad) + io, per shard
    step_seconds_per_rank: float = 0.0   # lookups + what its shard sends, per step

    def contract(self) -> dict[str, Any]:
        return {"name": self.name, "rows": self.rows, "dim": self.dim,
                "pooling_factor": self.pooling_factor, "feature": self.feature,
                "sequence": self.sequence, "sharding_type": self.sharding_type,
                "compute_kernel": self.compute_kernel, "ranks": list(self.ranks)}


@dataclass(eq=False, repr=False)
class RankLoad:
    """One rank's predicted embedding memory and step work (a `sharding.per_rank` row)."""

    rank: int
    memory_bytes: float             # embedding shards (weights, state, grads, io buffers)
    lookup_seconds: float           # embedding lookups fwd + bwd (+ dense optimizer of DP tables)
    comm_seconds: float             # pooled all-to-all / reduce-scatter it sends or receives
    tables: int                     # shards it holds (data-parallel tables not counted)

    @property
    def seconds(self) -> float:
        return self.lookup_seconds + self.comm_seconds


@dataclass(eq=False, repr=False)
class Sharding:
    """The per-table sharding plan, its per-rank loads and the rank the step waits for."""

    tables: list[TableShard]
    per_rank: list[RankLoad]
    world_size: int
    critical_rank: int              # the rank the step waits for
    alternatives: dict[str, float | None] = field(default_factory=dict)  # all-one-type plan -> step s
    explanation: list[str] = field(default_factory=list)
    stands_on: dict[str, Any] = field(default_factory=dict)

    def contract(self) -> dict[str, Any]:
        """RECLAUNCH_SHARDING: what the trainer executes (examples/trainer/README.md, "The plan")."""
        return {"version": 1, "world_size": self.world_size, "engine": "torchrec",
                "tables": [t.contract() for t in self.tables]}

    @property
    def model_parallel(self) -> bool:
        return any(t.sharding_type != "data_parallel" for t in self.tables)


@dataclass(eq=False, repr=False)
class Comm:
    """Collective time per step and the bus bandwidths it was computed with."""

    allreduce_seconds_per_step: float
    alltoall_seconds_per_step: float
    bandwidth_gbps_used: float      # effective bus bandwidth used for the all-reduce, GB/s
    intra_node_gbps: float
    inter_node_gbps: float


@dataclass(eq=False, repr=False)
class StepTime:
    """One training step's parts, seconds (the `step` of plan --json)."""

    embedding_seconds: float
    dense_compute_seconds: float
    allreduce_seconds: float
    alltoall_seconds: float
    exposed_comm_seconds: float     # what overlap does not hide
    total_seconds: float
    host_seconds: float = 0.0       # what the CPU issues per step (launches + host work)


@dataclass(eq=False, repr=False)
class Cost:
    """Hourly rates and whole-job totals, USD (the `cost` of plan --json)."""

    on_demand_usd_per_hour: float | None   # whole cluster, instances only
    spot_usd_per_hour: float | None
    on_demand_total_usd: float | None      # whole job, all line items
    spot_total_usd: float | None           # expected (mean), reclaims included
    spot_p50_usd: float | None
    spot_p90_usd: float | None
    control_plane_usd: float
    storage_usd: float
    price_as_of: str | None
    price_source: str | None
    stale: bool
    expected_reclaims: float = 0.0
    on_demand_total_usd_range: list[float] | None = None   # [P10, P90] (planner/uncertainty.py)
    spot_total_usd_range: list[float] | None = None


@dataclass(eq=False, repr=False)
class Plan:
    """A whole plan: where, how many, how fast, how much (`Plan.to_json` is plan --json)."""

    spec: "Spec"
    cloud: str
    region: str | None
    zones: list[str]
    instance_type: str | None       # None for cloud: local
    offer: "Offer | None"
    nodes: int
    min_nodes: int
    max_nodes: int
    gpus_per_node: int
    gpu: str | None
    gpu_memory_gib: float | None
    fabric: str                     # fabric profile name (reclaunch.fabric)
    nccl_env: dict[str, str]
    memory: Memory
    comm: Comm
    step: StepTime
    throughput_samples_per_second: float
    duration_hours: float
    cost: Cost
    spot: bool
    dataloader_workers: int         # per process, a hint for render/local
    warnings: list[str] = field(default_factory=list)
    constants: dict[str, Any] = field(default_factory=dict)   # what the numbers came from
    picked_from: list[str] = field(default_factory=list)      # instance types the pick compared
    pick_reason: str | None = None      # why the pick won: price, scaling, memory (planner.sizing)
    zones_as_planned: list[str] = field(default_factory=list)  # before any capacity fallback
    sharding: Sharding | None = None
    # What the throughput stands on (planner/evidence.py): {kind: model | measured, source,
    # measured_at}; the model's own figure beside a measured one; the startup timeline.
    throughput_model_samples_per_second: float | None = None
    throughput_basis: dict[str, Any] = field(default_factory=lambda: {"kind": "model", "source": None,
                                                                       "measured_at": None})
    startup: Any = None
    context: Any = field(default=None, repr=False)   # the PlanContext it was made with (not JSON)
    throughput_range: list[float] | None = None     # [P10, P90] samples/s (planner/uncertainty.py)
    duration_hours_range: list[float] | None = None
    range_covers: list[str] = field(default_factory=list)   # what the P10-P90 ranges account for
    # The training stack the figure assumes (planner/stack_view.py): name, how the spec said so,
    # the knobs, and the other stack's figure when the spec is silent.
    stack: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def world_size(self) -> int:
        return self.nodes * self.gpus_per_node

    def to_json(self, per_rank: bool = True) -> dict[str, Any]:
        """The `plan --json` contract. per_rank=False keeps the output size independent of
        the node count (the plan ConfigMap): per-rank predictions become min / max."""
        return {
            "name": self.name,
            "cloud": self.cloud,
            "region": self.region,
            "zones": self.zones,
            "instance_type": self.instance_type,
            "nodes": self.nodes,
            "min_nodes": self.min_nodes,
            "max_nodes": self.max_nodes,
            "gpus_per_node": self.gpus_per_node,
            "gpu": self.gpu,
            "gpu_memory_gib": self.gpu_memory_gib,
            "fabric": self.fabric,
            "spot": self.spot,
            "memory": asdict(self.memory),
            "comm": asdict(self.comm),
            "step": asdict(self.step),
            "throughput_samples_per_second": self.throughput_samples_per_second,
            "throughput_model_samples_per_second": self.throughput_model_samples_per_second,
            "throughput_basis": dict(self.throughput_basis),
            "startup": self.startup.to_json() if self.startup is not None else None,
            "throughput_range": self.throughput_range,
            "range_covers": list(self.range_covers),
            "stack": dict(self.stack),
            "duration_hours": self.duration_hours,
            "duration_hours_range": self.duration_hours_range,
            "cost": asdict(self.cost),
            "nccl_env": dict(self.nccl_env),
            "dataloader_workers": self.dataloader_workers,
            "warnings": list(self.warnings),
            "constants": dict(self.constants),
            "picked_from": list(self.picked_from),
            **({"pick_reason": self.pick_reason} if self.pick_reason else {}),
            "zones_as_planned": list(self.zones_as_planned or self.zones),
            "sharding": _sharding_json(self.sharding, per_rank),
            **({"workdir": self.context.workdir.summary()}
               if getattr(self.context, "workdir", None) is not None else {}),
        }


def _sharding_json(s: Sharding | None, per_rank: bool = True) -> dict[str, Any] | None:
    if s is None:
        return None
    tables = []
    for t in s.tables:
        row = t.contract()
        row.update(pinned=t.pinned, memory_bytes_per_rank=int(t.memory_bytes_per_rank),
                   step_seconds_per_rank=t.step_seconds_per_rank)
        tables.append(row)
    ranks = [{"rank": r.rank, "memory_bytes": int(r.memory_bytes),
              "lookup_seconds": r.lookup_seconds, "comm_seconds": r.comm_seconds,
              "tables": r.tables} for r in s.per_rank]
    if not per_rank:
        ranks = [min(ranks, key=lambda r: (r["lookup_seconds"] + r["comm_seconds"], r["rank"])),
                 ranks[s.critical_rank]]
    return {"world_size": s.world_size, "engine": "torchrec", "tables": tables,
            "per_rank": ranks,
            "critical_rank": s.critical_rank, "alternatives": dict(s.alternatives),
            "explanation": list(s.explanation), "stands_on": dict(s.stands_on)}
