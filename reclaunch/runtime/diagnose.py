"""Measured against planned, and the likely cause when they differ (issue 17).

Pure: a `Measured` (runtime.metrics) and `PlanFacts` (numbers taken from the Plan) in, a
`Diagnosis` out. The findings come from the rule table in diagnose_rules.yaml (dated, with
sources; every threshold lives there), applied by runtime.findings.
Reading logs and re-planning happen in runtime.observe.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from reclaunch.runtime import findings as rules_
from reclaunch.runtime.findings import Finding, duration

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan
    from reclaunch.runtime.metrics import Measured

RULES_FILE = Path(__file__).with_name("diagnose_rules.yaml")


@functools.lru_cache(maxsize=1)
def load_rules() -> dict[str, Any]:
    """The bundled rule table (read once; the module's only file access)."""
    return yaml.safe_load(RULES_FILE.read_text())


@dataclass(frozen=True)
class PlanFacts:
    """What the rules need from the plan, as plain numbers (tests build these directly)."""

    name: str
    nodes: int
    gpus_per_node: int
    samples_per_s: float
    step_s: float
    embedding_s: float
    dense_s: float
    allreduce_s: float
    alltoall_s: float
    exposed_comm_s: float
    mem_bytes: int                     # the plan's per-GPU total without the planner's reserve
    mem_capacity_bytes: int
    activation_bytes: int
    duration_hours: float
    total_samples: float               # dataset.samples x epochs
    global_batch: int                  # batch x grad accumulation x world size
    usd_per_hour: float
    planned_usd: float | None
    max_usd: float | None
    batch_size: int
    num_workers: int
    precision: str
    lr: float | None = None            # job.env RECLAUNCH_LR or --lr in job.args, if set
    fabric: str = ""
    transport: str | None = None       # what NCCL should print for this fabric
    gpudirect: bool = False
    fallback_fix: str = ""
    low_busbw_fix: str = ""
    parallelism: str = "data"
    source: str = "cluster.yaml"
    one_host: bool = False             # every node is a process group on this machine (cloud: local)
    startup_hours: float = 0.0         # the plan's time to first step, inside duration_hours

    @property
    def world_size(self) -> int:
        return self.nodes * self.gpus_per_node


def _lr(job) -> float | None:
    raw = job.env.get("RECLAUNCH_LR")
    args = [str(a) for a in job.args]
    for i, a in enumerate(args):
        if a == "--lr" and i + 1 < len(args):
            raw = args[i + 1]
        elif a.startswith("--lr="):
            raw = a.split("=", 1)[1]
    try:
        return float(raw) if raw is not None else None
    except (ValueError, TypeError):   # TypeError: a {secret, key} reference, no number here
        return None


def facts_from_plan(plan: "Plan", usd_per_hour: float, profile: Any = None) -> PlanFacts:
    """PlanFacts of a Plan; `profile` is its resolved fabric profile (manifests.job)."""
    from reclaunch.planner.cost import headline_usd

    spec, st, mem = plan.spec, plan.step, plan.memory
    job = spec.job
    workers = job.num_workers if job.num_workers is not None else plan.dataloader_workers
    return PlanFacts(
        name=plan.name, nodes=plan.nodes, gpus_per_node=plan.gpus_per_node,
        samples_per_s=plan.throughput_samples_per_second, step_s=st.total_seconds,
        embedding_s=st.embedding_seconds, dense_s=st.dense_compute_seconds,
        allreduce_s=st.allreduce_seconds, alltoall_s=st.alltoall_seconds,
        exposed_comm_s=st.exposed_comm_seconds,
        mem_bytes=mem.total_bytes_per_gpu - mem.reserve_bytes,
        mem_capacity_bytes=mem.capacity_bytes_per_gpu, activation_bytes=mem.activation_bytes,
        duration_hours=plan.duration_hours,
        total_samples=float(job.dataset.samples) * float(job.dataset.epochs),
        global_batch=job.batch_size * job.grad_accumulation * plan.world_size,
        usd_per_hour=usd_per_hour, planned_usd=headline_usd(plan.cost, plan.spot),
        max_usd=spec.budget.max_usd, batch_size=job.batch_size, num_workers=int(workers or 0),
        precision=job.precision, lr=_lr(job), fabric=plan.fabric,
        transport=getattr(profile, "transport", None),
        gpudirect=bool(getattr(profile, "gpudirect", False)),
        fallback_fix=getattr(profile, "fallback_fix", "") or "",
        low_busbw_fix=getattr(profile, "low_busbw_fix", "") or "",
        parallelism=mem.parallelism, source=getattr(spec, "_source", "cluster.yaml"),
        one_host=bool(getattr(spec, "runs_here", False)),
        startup_hours=(plan.startup.seconds / 3600.0) if plan.startup is not None else 0.0)


@dataclass(frozen=True)
class Projection:
    samples_per_s: float
    done_samples: float
    hours_total: float                 # the whole job at the measured rate
    hours_left: float
    usd_total: float | None            # the plan's whole-job figure scaled to hours_total


def project(facts: PlanFacts, samples_per_s: float | None, step: int,
            world_size: int | None = None) -> Projection | None:
    """The job at the measured rate. Cost scales the plan's whole-job figure by time: every
    line item (instances, reclaim overhead, control plane, storage) is priced per hour."""
    if not samples_per_s or samples_per_s <= 0:
        return None
    batch = facts.global_batch
    if world_size and facts.world_size:   # elastic: the batch the job actually runs
        batch = facts.global_batch // facts.world_size * world_size
    done = min(facts.total_samples, float(step) * batch)
    # The whole job as the plan counts it: the startup before the first step plus the
    # training at the measured rate (duration_hours includes the startup too).
    hours = facts.startup_hours + facts.total_samples / samples_per_s / 3600.0
    usd = None
    if facts.planned_usd is not None and facts.duration_hours > 0:
        usd = facts.planned_usd * hours / facts.duration_hours
    elif facts.usd_per_hour:
        usd = facts.usd_per_hour * hours
    return Projection(samples_per_s, done, hours,
                      max(0.0, facts.total_samples - done) / samples_per_s / 3600.0, usd)


# ---- the measured-vs-planned table -----------------------------------------------------------

def comparison(m: "Measured", f: PlanFacts | None, proj: Projection | None) -> list[dict[str, Any]]:
    """Rows of {what, planned, measured, unit, note}; None where one side has no figure."""
    def row(what, planned, measured, unit, note=""):
        return {"what": what, "planned": planned, "measured": measured, "unit": unit, "note": note}

    p = f or None
    rows = [
        row("samples/s (cluster)", p and p.samples_per_s, m.samples_per_s, "samples/s"),
        row("step time", p and p.step_s, m.step_s, "s"),
        row("data wait", 0.0 if p else None, m.data_wait_s, "s",
            "the plan assumes the loader keeps up"),
        row("lookups + dense compute (fwd+bwd)", p and p.embedding_s + p.dense_s, m.fwd_bwd_s,
            "s", p and f"lookups {p.embedding_s * 1e3:.2f} ms + dense {p.dense_s * 1e3:.2f} ms" or ""),
        row("optimizer", None, m.optimizer_s, "s", "inside the plan's compute figures"),
        row("exposed communication", p and p.exposed_comm_s, m.comm_s, "s",
            p and f"all-reduce {p.allreduce_s * 1e3:.2f} ms, all-to-all {p.alltoall_s * 1e3:.2f} ms "
                  "before overlap" or ""),
        row("peak memory per GPU", p and p.mem_bytes, m.peak_mem_bytes, "bytes",
            ("process RSS (interpreter and torch too; the plan counts tensors)" if m.mem_kind == "rss"
             else m.mem_kind or "?") + (f"; capacity {p.mem_capacity_bytes / 2**30:.1f} GiB" if p else "")),
    ]
    if m.mem_kind == "rss":   # not the same quantity: no measured/planned ratio
        rows[-1]["comparable"] = False
    if p:
        rows.append(row("job duration", p.duration_hours, proj and proj.hours_total, "h",
                        proj and f"{duration(proj.hours_left)} left at the measured rate" or ""))
        rows.append(row("job cost", p.planned_usd, proj and proj.usd_total, "usd",
                        "at the measured rate" if proj else ""))
    if p and p.nodes > 1 or m.transport:
        rows.append(row("NCCL transport", p and p.transport, m.transport, "",
                        "" if m.gdr is None else ("GPUDirect RDMA" if m.gdr else "no GPUDirect")))
    return rows


# ---- the rule table, applied ---------------------------------------------------------------

SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}

# Order matters: a straggler makes every other rank wait in the collectives, so its comm time
# is not a fabric problem; a named cause makes "below plan" redundant.
RULES = [(rid, getattr(rules_, rid)) for rid in (
    "loss_nan", "loss_exploding", "transport_fallback", "missing_gpudirect", "memory_headroom",
    "memory_growth", "straggler", "data_loader_bound", "comm_bound", "throughput_drift",
    "interrupted", "below_plan")]
TIME_RULES = {"straggler", "data_loader_bound", "comm_bound", "throughput_drift", "below_plan"}
PERF_RULES = {"transport_fallback", "missing_gpudirect", "straggler", "data_loader_bound",
              "comm_bound"}


def evaluate(m, f, proj, table: dict[str, Any]) -> tuple[list[Finding], list[str]]:
    rules = table.get("rules") or {}
    notes: list[str] = []
    found: list[Finding] = []
    few = min((r.intervals for r in m.ranks), default=0) < int(table.get("min_intervals", 2))
    if few:
        notes.append("fewer than {} logging intervals per rank so far: time-based rules wait "
                     "for more".format(table.get("min_intervals", 2)))
    for rid, fn in RULES:
        cfg = rules.get(rid)
        if cfg is None or (few and rid in TIME_RULES):
            continue
        if rid == "comm_bound" and any(x.rule in ("straggler", "transport_fallback") for x in found):
            continue
        if rid == "below_plan" and any(x.rule in PERF_RULES | {"throughput_drift"} for x in found):
            continue

        def mk(severity, what, fix, expected, _rid=rid, _cfg=cfg, **kw):
            return Finding(rule=_rid, title=_cfg.get("title", _rid), severity=severity, what=what,
                           fix=fix, expected=expected, sources=tuple(_cfg.get("sources", ())),
                           as_of=str(_cfg.get("as_of", "")), **kw)
        found.extend(fn(m, f, proj, cfg.get("thresholds") or {}, mk))
    if f is not None and f.nodes > 1 and f.transport and not m.transport:
        notes.append("no NCCL transport in the logs: set nccl.debug: INFO to see which network "
                     "NCCL uses (NET/IB, NET/OFI, NET/Socket ...)")
    found.sort(key=lambda x: SEVERITY_ORDER.get(x.severity, 9))
    return found, notes


@dataclass(frozen=True)
class Diagnosis:
    name: str
    measured: "Measured"
    facts: PlanFacts | None
    projection: Projection | None
    rows: list[dict[str, Any]]
    findings: list[Finding]
    notes: list[str]
    rules_version: str

    def to_json(self) -> dict[str, Any]:
        m = self.measured
        return {
            "name": self.name,
            "rules_version": self.rules_version,
            "world_size": m.world_size, "step": m.step, "finished": m.finished,
            "rows": self.rows,
            "ranks": [{**asdict(r), "busy_s": r.busy_s} for r in m.ranks],
            "projection": asdict(self.projection) if self.projection else None,
            "findings": [asdict(x) for x in self.findings],
            "notes": list(self.notes),
            "plan": asdict(self.facts) if self.facts else None,
        }


def diagnose(name: str, m: "Measured", facts: PlanFacts | None,
             rules: dict[str, Any] | None = None) -> Diagnosis:
    """The whole analysis; `rules` defaults to the bundled table."""
    rules = rules or load_rules()
    proj = project(facts, m.samples_per_s, m.step, m.world_size) if facts else None
    findings, notes = evaluate(m, facts, proj, rules)
    if facts is None:
        notes.insert(0, "no plan for this cluster (its spec is not in the journal): "
                        "measured figures only; the plan-relative rules were skipped")
    if m.malformed:
        notes.append(f"{m.malformed} RECLAUNCH_METRICS line(s) could not be parsed and were skipped")
    return Diagnosis(name, m, facts, proj, comparison(m, facts, proj), findings, notes,
                     str(rules.get("version", "")))

