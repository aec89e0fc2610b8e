"""The sharding plan the trainer executes (RECLAUNCH_SHARDING, described in this folder's README, "The plan"; issue 14).

reclaunch's planner chooses, per table, how it is sharded and on which ranks, and hands the
result to every training process as RECLAUNCH_SHARDING (compact JSON, see `parse`). This
module turns it into TorchRec's `ParameterSharding`s with TorchRec's own helpers
(torchrec/distributed/sharding_plan.py: data_parallel, table_wise, row_wise, column_wise,
table_row_wise, construct_module_sharding_plan) -- it executes the plan, it never re-plans.

Without RECLAUNCH_SHARDING (old job env) the tables come from RECLAUNCH_TABLE_ROWS and are
placed table-wise round-robin, so an old cluster.yaml still runs.
Pure functions apart from `module_plan` (which needs torchrec and an initialised world size).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Sequence

SHARDING_TYPES = ("data_parallel", "table_wise", "row_wise", "column_wise", "table_row_wise")
KERNELS = ("fused", "dense")
# TorchRec's CPU path (fbgemm-gpu-cpu, gloo) shards data-parallel and table-wise only.
CPU_SHARDING = ("data_parallel", "table_wise")
TARGET_SUFFIX = "__target"   # DIN: the candidate item is looked up in the sequence's own table


class PlanError(ValueError):
    """RECLAUNCH_SHARDING is malformed or cannot run here; the message says why in one line."""


@dataclass
class Table:
    name: str
    rows: int
    dim: int
    feature: str
    sharding_type: str = "table_wise"
    compute_kernel: str = "fused"
    ranks: list[int] = field(default_factory=list)
    pooling_factor: float = 1.0
    sequence: bool = False

    @property
    def features(self) -> list[str]:
        """Feature names looked up in this table: DIN's sequence table also serves the target."""
        return [self.feature, self.feature + TARGET_SUFFIX] if self.sequence else [self.feature]


@dataclass
class Plan:
    tables: list[Table]
    world_size: int             # the world size the plan was made for
    source: str                 # "RECLAUNCH_SHARDING" | "fallback"
    notes: list[str] = field(default_factory=list)

    @property
    def pooled(self) -> list[Table]:
        return [t for t in self.tables if not t.sequence]

    @property
    def sequences(self) -> list[Table]:
        return [t for t in self.tables if t.sequence]

    def summary(self) -> str:
        return " ".join(f"{t.name}:{t.sharding_type}{t.ranks if t.ranks else ''}" for t in self.tables)


def parse(text: str) -> Plan:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PlanError(f"RECLAUNCH_SHARDING is not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("version") != 1:
        raise PlanError("RECLAUNCH_SHARDING: expected an object with \"version\": 1")
    if doc.get("engine", "torchrec") != "torchrec":
        raise PlanError(f"RECLAUNCH_SHARDING is for engine {doc.get('engine')!r}, this trainer runs torchrec")
    world = doc.get("world_size")
    raw = doc.get("tables")
    if not isinstance(world, int) or world < 1 or not isinstance(raw, list) or not raw:
        raise PlanError("RECLAUNCH_SHARDING needs world_size >= 1 and a non-empty tables list")
    tables, seen = [], set()
    for i, t in enumerate(raw):
        try:
            table = Table(name=str(t["name"]), rows=int(t["rows"]), dim=int(t["dim"]),
                          feature=str(t.get("feature") or t["name"]),
                          sharding_type=str(t.get("sharding_type", "table_wise")),
                          compute_kernel=str(t.get("compute_kernel", "fused")),
                          ranks=[int(r) for r in (t.get("ranks") or [])],
                          pooling_factor=float(t.get("pooling_factor", 1.0)),
                          sequence=bool(t.get("sequence", False)))
        except (KeyError, TypeError, ValueError) as exc:
            raise PlanError(f"RECLAUNCH_SHARDING tables[{i}]: {type(exc).__name__} {exc}") from None
        if table.sharding_type not in SHARDING_TYPES:
            raise PlanError(f"table {table.name}: sharding_type {table.sharding_type!r} is not one of "
                            f"{', '.join(SHARDING_TYPES)}")
        if table.compute_kernel not in KERNELS:
            raise PlanError(f"table {table.name}: compute_kernel {table.compute_kernel!r} is not one of "
                            f"{', '.join(KERNELS)}")
        if table.rows < 1 or table.dim < 1:
            raise PlanError(f"table {table.name}: rows and dim must be >= 1")
        if table.sharding_type == "table_wise" and len(table.ranks) != 1:
            raise PlanError(f"table {table.name}: table_wise needs exactly one rank, got {table.ranks}")
        if table.name in seen or table.feature in {f for x in tables for f in x.features}:
            raise PlanError(f"table {table.name}: duplicate table or feature name")
        seen.add(table.name)
        tables.append(table)
    return Plan(tables, world, "RECLAUNCH_SHARDING")


def fallback(table_rows: Sequence[int], dim: int, world_size: int, history_length: int = 0,
             pooling: Sequence[float] = ()) -> Plan:
    """Old env: tables t0..tN from RECLAUNCH_TABLE_ROWS, table-wise round-robin over ranks.
    DIN (history_length > 0): the last table is the behaviour sequence of that length.
    pooling: ids per sample of each pooled table (RECLAUNCH_POOLING; missing ones are 1)."""
    tables = []
    for i, rows in enumerate(table_rows):
        seq = history_length > 0 and i == len(table_rows) - 1
        pf = float(history_length) if seq else float(pooling[i]) if i < len(pooling) else 1.0
        tables.append(Table(name=f"t{i}", rows=int(rows), dim=dim, feature=f"f{i}",
                            sharding_type="table_wise", ranks=[i % world_size],
                            pooling_factor=pf, sequence=seq))
    return Plan(tables, world_size, "fallback")


def for_world(plan: Plan, world: int, device_type: str) -> Plan:
    """The plan as it runs on `world` ranks of `device_type`.

    Elastic restarts can change the world size: ranks are re-derived deterministically
    (table_wise rank = ranks[0] % world; multi-rank shardings keep the ranks that still exist,
    in order, else all ranks) and the change is noted for the log. On CPU a row/column-wise
    table cannot run (TorchRec needs CUDA for it): that is an error, not a silent re-plan.
    """
    notes = list(plan.notes)
    if plan.world_size != world:
        notes.append(f"plan made for world_size={plan.world_size}, running on {world}: "
                     f"ranks re-derived (table_wise rank = ranks[0] % {world})")
    out = []
    for t in plan.tables:
        if device_type != "cuda" and t.sharding_type not in CPU_SHARDING:
            raise PlanError(f"table {t.name}: {t.sharding_type} needs CUDA; on CPU TorchRec shards "
                            f"{' and '.join(CPU_SHARDING)} only")
        ranks = list(t.ranks)
        if t.sharding_type == "table_wise":
            ranks = [ranks[0] % world]
        elif t.sharding_type == "data_parallel":
            ranks = []
        elif plan.world_size != world:
            kept = [r for r in ranks if r < world]
            ranks = kept or list(range(world))
        out.append(Table(**{**t.__dict__, "ranks": ranks}))
    return Plan(out, world, plan.source, notes)


def for_cpu_sequences(plan: Plan, device_type: str, fused_ok: bool) -> Plan:
    """DIN's sequence tables as they can run on CPU.

    fbgemm_gpu_cpu's dense TBE ignores PoolingMode.NONE and always pools (its CPU forward,
    split_embedding_codegen_forward_cpu, knows SUM and MEAN only: pytorch/FBGEMM
    fbgemm_gpu/codegen/embedding_forward_split_cpu.h), so an EmbeddingCollection on the dense
    kernel returns one row per bag and TorchRec's construct_jagged_tensors fails to split it.
    TorchRec builds data_parallel tables on the dense kernel only, so on CPU a sequence table
    goes fused and data_parallel becomes table_wise (rank = its index among the sequence tables
    % world, deterministic on every rank); each change is noted for the log. On CUDA the dense
    kernel has nobag kernels and the plan runs as given. Pure; `plan` itself is untouched.
    """
    if device_type == "cuda" or not plan.sequences:
        return plan
    notes, out, k = list(plan.notes), [], 0
    for t in plan.tables:
        if not t.sequence or (t.sharding_type != "data_parallel" and t.compute_kernel == "fused"):
            out.append(t)
            continue
        if not fused_ok:
            raise PlanError(f"sequence table {t.name}: on CPU it needs the fused kernel (fbgemm's CPU dense "
                            "kernel cannot return unpooled rows), and that needs optimizer sgd, adagrad or "
                            "rowwise_adagrad")
        if t.dim % 4:
            raise PlanError(f"sequence table {t.name}: on CPU it needs the fused kernel, which needs a dim "
                            f"divisible by 4 (got {t.dim})")
        was = f"{t.sharding_type}/{t.compute_kernel}"
        ranks = t.ranks if t.sharding_type != "data_parallel" else [k % plan.world_size]
        kind = "table_wise" if t.sharding_type == "data_parallel" else t.sharding_type
        out.append(Table(**{**t.__dict__, "sharding_type": kind, "compute_kernel": "fused", "ranks": ranks}))
        notes.append(f"sequence table {t.name}: {was} -> {kind}{ranks}/fused on CPU (fbgemm's CPU dense "
                     "kernel pools every lookup)")
        k += 1
    return Plan(out, plan.world_size, plan.source, notes)


def from_env(environ, table_rows: Sequence[int], dim: int, world_size: int, history_length: int = 0,
             pooling: Sequence[float] = ()) -> Plan:
    text = environ.get("RECLAUNCH_SHARDING", "").strip()
    if text:
        return parse(text)
    return fallback(table_rows, dim, world_size, history_length, pooling)


def generator(table: Table, local_size: int = 1):
    """TorchRec's ParameterShardingGenerator for one table (torchrec.distributed.sharding_plan)."""
    from torchrec.distributed import sharding_plan as sp

    kind = table.sharding_type
    if kind == "data_parallel":
        return sp.data_parallel()
    kernel = table.compute_kernel
    if kind == "table_wise":
        return sp.table_wise(rank=table.ranks[0], compute_kernel=kernel)
    if kind == "row_wise":
        return sp.row_wise(compute_kernel=kernel)
    if kind == "column_wise":
        return sp.column_wise(ranks=table.ranks, compute_kernel=kernel)
    # table_row_wise: row-wise inside one host; the host is that of the plan's first rank.
    # (TorchRec's helper takes no kernel: it picks fused under the in-backward optimizer;
    # plancheck says so when the plan asked for another.)
    return sp.table_row_wise(host_index=(table.ranks[0] if table.ranks else 0) // max(local_size, 1))


def module_plan(module, tables: Sequence[Table], world_size: int, local_size: int, device_type: str):
    """EmbeddingModuleShardingPlan for one EmbeddingBagCollection / EmbeddingCollection."""
    from torchrec.distributed.sharding_plan import construct_module_sharding_plan

    return construct_module_sharding_plan(module, {t.name: generator(t, local_size) for t in tables},
                                          local_size=local_size, world_size=world_size,
                                          device_type=device_type)
