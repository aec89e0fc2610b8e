"""Readable output for a Plan and a comparison. rich is imported here only, lazily."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

from reclaunch.planner.memory import GIB

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan


def _usd(v: float | None) -> str:
    from reclaunch.ui.money import usd

    return usd(v)


def _storage_size(st) -> str:
    from reclaunch.planner.storage_size import billed_gib
    from reclaunch.spec.units import human_bytes

    got = billed_gib(st.kind, st.size)
    return human_bytes(got * GIB if got else st.size)


def _span(rng, fmt) -> str:
    """ "  [P10-P90 a - b]": the calibration spread (planner/uncertainty.py), when there is one.
    It starts with "P": rich would take "[lowercase ...]" for markup and drop it."""
    return f"  [P10-P90 {fmt(rng[0])} - {fmt(rng[1])}]" if rng else ""


def _rate(v: float) -> str:
    return f"{v / 1e6:.2f}M" if v >= 1e6 else f"{v / 1e3:.1f}k" if v >= 1e3 else f"{v:.0f}"


def _console(width: int):
    from rich.console import Console

    return Console(file=io.StringIO(), width=width, force_terminal=False, color_system=None,
                   highlight=False, emoji=False)


def plan_renderables(plan) -> list:
    """rich renderables for `plan` (the CLI may print these to a live console)."""
    from rich.table import Table

    m, s, c = plan.memory, plan.step, plan.cost
    where = (f"{plan.nodes} x {plan.instance_type} ({plan.cloud} {plan.region}), "
             f"{plan.world_size} x {plan.gpu} {plan.gpu_memory_gib:g} GiB"
             if plan.instance_type else
             f"{plan.nodes} x {plan.gpus_per_node} CPU process(es) on this machine (cloud: local)")
    per = "GPU" if plan.instance_type else "process"     # cloud: local runs CPU processes
    head = Table(title=f"plan: {plan.name}", show_header=False, box=None)
    head.add_column(style="bold")
    head.add_column()
    head.add_row("cluster", where)
    if getattr(plan.offer, "node_names", None):   # cloud: kubernetes: what was read, and how
        from reclaunch.ui.text import shown   # node names and labels come from the cluster
        head.add_row("nodes", shown(plan.offer.source))
    if plan.pick_reason:
        head.add_row("picked", plan.pick_reason)
    head.add_row("fabric", plan.fabric)
    head.add_row("parallelism", f"{m.parallelism} (needs {m.gpus_needed or 'no'} "
                 f"{'process(es)' if per == 'process' else 'GPU(s)'}; "
                 f"embeddings {m.total_embedding_bytes / GIB:.2f} GiB in all)")
    head.add_row("fits", ("yes" if m.fits else "NO") +
                 f": {m.total_bytes_per_gpu / GIB:.2f} of {m.capacity_bytes_per_gpu / GIB:.1f} GiB per {per}")
    head.add_row("throughput", _throughput(plan) + _span(plan.throughput_range, _rate))
    head.add_row("duration", _dur(plan.duration_hours * 3600) + (
        f" (startup {_dur(plan.startup.seconds)} included)" if plan.startup is not None else "")
        + _span(plan.duration_hours_range, lambda v: _dur(v * 3600)))
    if plan.startup is not None and plan.startup.steps:
        head.add_row("startup", _startup(plan.startup))
    od = c.on_demand_total_usd
    if plan.instance_type is None:   # cloud: local: CPU processes here, nothing to pay
        head.add_row("cost", "none: CPU processes on this machine")
    else:
        head.add_row("cost on-demand", f"{_usd(od)} ({_usd(c.on_demand_usd_per_hour)}/h)"
                     + _span(c.on_demand_total_usd_range, _usd))
        head.add_row("cost spot", f"{_usd(c.spot_total_usd)} mean" + _span(c.spot_total_usd_range, _usd)
                     + f"; reclaims alone: P50 {_usd(c.spot_p50_usd)}, P90 {_usd(c.spot_p90_usd)} "
                     f"({c.expected_reclaims:.2f} reclaims expected)")
        head.add_row("line items", f"control plane {_usd(c.control_plane_usd)}, storage {_usd(c.storage_usd)}")
        head.add_row("prices", f"as of {c.price_as_of or '-'}" + (" (STALE)" if c.stale else ""))

    mem = Table(title=f"memory per {per} (GiB)")
    for col in ("embeddings", "dense", "gradients", "optimizer", "activations", "reserve", "total"):
        mem.add_column(col, justify="right")
    mem.add_row(*(f"{b / GIB:.2f}" for b in (m.embedding_bytes, m.dense_bytes, m.gradient_bytes,
                                              m.optimizer_bytes, m.activation_bytes,
                                              m.reserve_bytes, m.total_bytes_per_gpu)))
    st = Table(title="step time (ms)")
    # embeddings + dense + exposed comm + overhead = total: the overhead is the per-step fixed
    # cost (planner/perf.py step_overhead_seconds) and any wait on the input pipeline.
    other = s.total_seconds - s.embedding_seconds - s.dense_compute_seconds - s.exposed_comm_seconds
    for col in ("embeddings", "dense", "all-reduce", "all-to-all", "exposed comm", "overhead", "total"):
        st.add_column(col, justify="right")
    st.add_row(*(f"{v * 1e3:.2f}" for v in (s.embedding_seconds, s.dense_compute_seconds,
                                             s.allreduce_seconds, s.alltoall_seconds,
                                             s.exposed_comm_seconds, max(other, 0.0), s.total_seconds)))
    if plan.spec.job.embedding_overlap == "full":   # the parts overlap: they do not add up
        st.caption = ("job.embedding_overlap: full: embeddings and their all-to-all run beside the "
                      "dense compute; total = the longer path + exposed all-reduce + overhead")
    out = [head, mem, st, *_sharding_tables(plan)]
    if plan.warnings:
        warn = Table(title="warnings", show_header=False, box=None)
        warn.add_column()
        for w in plan.warnings:
            warn.add_row(f"! {w}")
        out.append(warn)
    return out


def _throughput(plan) -> str:
    """The priced figure and what it stands on: a measured run (with the model beside it) or
    the model (for cloud: local, calibrated on this host or not)."""
    b = plan.throughput_basis or {}
    text = f"{_rate(plan.throughput_samples_per_second)} samples/s"
    if b.get("kind") == "measured":
        model = plan.throughput_model_samples_per_second
        return (text + f" MEASURED ({b.get('source')}, {str(b.get('measured_at'))[:10]}); "
                f"model {_rate(model) if model else '-'}; priced at the measured rate")
    return text + (f" (model; {b['source']})" if plan.instance_type is None and b.get("source")
                   else " (model)")


def _startup(st) -> str:
    """One line: the steps in order with minutes, `$` on those that bill GPU hours."""
    steps = ", ".join(f"{s.name} {_dur(s.seconds)}{' $' if s.billed else ''}"
                      for s in st.steps if s.seconds > 0 or not s.name.startswith("file system"))
    return (f"{_dur(st.seconds)} to first step, {_dur(st.billed_seconds)} billed "
            f"($ = GPU hours billed): {steps}")


def _dur(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 5400 else f"{seconds / 3600:.2f} h"


def _ranks(ranks: list[int], world: int) -> str:
    if not ranks:
        return f"all {world}"
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}-{ranks[-1]}"
    return ",".join(map(str, ranks))


MAX_RANK_ROWS = 16


def _sharding_tables(plan) -> list:
    """The per-table plan and what it predicts per rank (memory, lookups, all-to-all)."""
    from rich.table import Table

    sh = plan.sharding
    if sh is None:
        return []
    t = Table(title="sharding per table (TorchRec)")
    for col, just in (("table", "left"), ("rows", "right"), ("dim", "right"), ("lookups", "right"),
                      ("sharding", "left"), ("kernel", "left"), ("ranks", "left"),
                      ("GiB / rank", "right"), ("ms / step", "right")):
        t.add_column(col, justify=just)
    for x in sh.tables:
        t.add_row(x.name + (" (seq)" if x.sequence else ""), f"{x.rows:,}", str(x.dim),
                  f"{x.pooling_factor:g}", x.sharding_type + (" (pinned)" if x.pinned else ""),
                  x.compute_kernel, _ranks(x.ranks, sh.world_size),
                  f"{x.memory_bytes_per_rank / GIB:.2f}", f"{x.step_seconds_per_rank * 1e3:.3f}")
    r = Table(title="predicted per rank (embedding part of the step)")
    for col in ("rank", "shards", "memory GiB", "lookups ms", "all-to-all ms", "total ms"):
        r.add_column(col, justify="right")
    ranks = sh.per_rank
    if len(ranks) > MAX_RANK_ROWS:     # the slowest, the fastest and the fullest stand for the rest
        keep = {sh.critical_rank, min(ranks, key=lambda x: x.seconds).rank,
                max(ranks, key=lambda x: x.memory_bytes).rank}
        ranks = [x for x in ranks if x.rank in keep]
    for x in ranks:
        mark = " (slowest)" if x.rank == sh.critical_rank and len(sh.per_rank) > 1 else ""
        r.add_row(f"{x.rank}{mark}", str(x.tables), f"{x.memory_bytes / GIB:.2f}",
                  f"{x.lookup_seconds * 1e3:.3f}", f"{x.comm_seconds * 1e3:.3f}",
                  f"{x.seconds * 1e3:.3f}")
    if len(ranks) < len(sh.per_rank):
        r.caption = f"{len(ranks)} of {len(sh.per_rank)} ranks shown (`plan --json` lists all)"
    why = Table(show_header=False, box=None)
    why.add_column()
    for line in sh.explanation:
        why.add_row(f"- {line}")
    return [t, r, why]


def render_plan(plan, width: int = 110) -> str:
    con = _console(width)
    for r in plan_renderables(plan):
        con.print(r)
    return con.file.getvalue()


def compare_renderables(rows: list, top: int | None = 10) -> list:
    """The recommendation first, then the `top` cheapest rows (None: all)."""
    from rich.table import Table

    shown = rows if top is None else rows[:top]
    t = Table(title="whole-job cost by offer" + (f" (ranked by {rows[0].basis})" if rows else ""))
    for col, just in (("#", "right"), ("instance", "left"), ("region", "left"), ("nodes", "right"),
                      ("fits", "left"), ("samples/s", "right"), ("hours", "right"),
                      ("on-demand $", "right"), ("spot $", "right"), ("note", "left")):
        t.add_column(col, justify=just)
    # How a row was sized is said once, in the caption; a row sized to the fewest nodes that
    # fit carries only a mark (the note column stays for what is particular to the row).
    fewest = [r for r in shown if r.sizing == "fewest"]
    mark = "*" if fewest and len(fewest) < len(shown) else ""
    for r in shown:
        p = r.plan
        note = ["recommended"] if r.recommended else []
        if not r.priced:
            sold = p.offer.purchase if p.offer is not None else "on-demand"
            note.append("no price" if sold == "on-demand" else f"{sold} only")
        if p.cost.stale:
            note.append("stale price")
        if (p.throughput_basis or {}).get("kind") == "measured":
            note.append("measured rate")
        t.add_row(str(r.rank), f"{p.cloud} {p.instance_type}", p.region or "-",
                  f"{p.nodes} ({p.world_size} GPU)" + (mark if r.sizing == "fewest" else ""),
                  "yes" if p.memory.fits else "NO",
                  _rate(p.throughput_samples_per_second), f"{p.duration_hours:.2f}",
                  _usd(p.cost.on_demand_total_usd), _usd(p.cost.spot_total_usd), ", ".join(note))
    captions = ([f"{mark + ' ' if mark else ''}nodes: the fewest the model fits on"
                 + (", the others the spec's GPU count" if mark else "")] if fewest else [])
    if len(shown) < len(rows):
        captions.append(f"{len(shown)} of {len(rows)} offers shown (--top N, --top 0 for all)")
    if captions:
        t.caption = "; ".join(captions)
    return [f"recommendation: {recommendation_line(rows)}", t]


def recommendation_line(rows: list) -> str:
    """One line: the cheapest offer that fits, in the project's money format."""
    best = next((r for r in rows if r.recommended), None)
    if best is None:
        return "no priced offer fits this job: run `reclaunch catalog refresh` or shrink the model"
    from reclaunch.planner.sizing import why

    p = best.plan
    text = (f"{p.nodes} x {p.instance_type} ({p.cloud} {p.region}, {p.world_size} x {p.gpu}): "
            f"{_usd(best.usd)} {best.basis}, {p.duration_hours:.2f} h")
    reason = why(p, [r.plan for r in rows], best.basis == "spot", head=False)   # price, scaling, memory
    if reason:
        text += f" ({reason})"
    spec_rows = [r for r in rows if r.sizing == "spec" and r.plan.memory.fits and r.usd is not None]
    if best.sizing == "fewest" and spec_rows:
        alt = spec_rows[0]
        text += (f"; fewer nodes win: scaling is poor, {alt.plan.nodes} x {alt.plan.instance_type} "
                 f"would cost {_usd(alt.usd)} for {alt.plan.duration_hours:.2f} h")
    return text


def render_compare(rows: list, width: int = 140, top: int | None = 10) -> str:
    con = _console(width)
    for r in compare_renderables(rows, top):
        con.print(r)
    return con.file.getvalue()


def show_plan(plan: "Plan", out: Any, problem: str | None) -> None:
    """The cost table and the resources `up` is about to create."""
    from rich.table import Table
    c = plan.cost
    t = Table(title=f"{plan.name}: {plan.nodes} x {plan.instance_type} in {plan.region}"
                    f"{' (' + ', '.join(plan.zones) + ')' if plan.zones else ''}")
    for col in ("", "per hour", "whole job"):
        t.add_column(col, justify="right" if col else "left")
    money = lambda v: _usd(v) if v is not None else "-"  # noqa: E731
    t.add_row("on-demand", money(c.on_demand_usd_per_hour), money(c.on_demand_total_usd))
    t.add_row("spot", money(c.spot_usd_per_hour), money(c.spot_total_usd))
    t.add_row("budget.max_usd", "", money(plan.spec.budget.max_usd))
    out.print(t)
    st = plan.spec.storage
    if getattr(plan.offer, "node_names", None):   # cloud: kubernetes: a cluster you bring
        out.print(f"resources: none created; the launch goes to namespace {plan.spec.namespace} "
                  f"on {plan.nodes} of the existing nodes of group {plan.offer.group}; "
                  f"~{plan.duration_hours:.1f} h")
    else:
        out.print(f"resources: Kubernetes cluster + node pool of {plan.nodes} x {plan.instance_type} "
                  f"({plan.gpus_per_node} x {plan.gpu}, {'spot' if plan.spot else 'on-demand'}), "
                  f"storage {st.kind}{' ' + _storage_size(st) if st.size else ''}; "
                  f"prices as of {c.price_as_of}; ~{plan.duration_hours:.1f} h")
    if problem:
        out.print(f"[yellow]budget: {problem}[/yellow]")
