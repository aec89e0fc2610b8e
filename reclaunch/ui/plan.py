"""Readable output for a Plan and a comparison: `plan` lays out its text with ui/grid.py (no
rich: start-up time, issue 25); show_plan (`up`) prints to a rich console."""

from __future__ import annotations

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
    It starts with "P": a rich console (`up --watch` prints this text) would take
    "[lowercase ...]" for markup and drop it."""
    return f"  [P10-P90 {fmt(rng[0])} - {fmt(rng[1])}]" if rng else ""


def _rate(v: float) -> str:
    return f"{v / 1e6:.2f}M" if v >= 1e6 else f"{v / 1e3:.1f}k" if v >= 1e3 else f"{v:.0f}"


def plan_lines(plan, width: int = 110, bold: bool = False) -> list[str]:
    """What `plan` prints, as lines (ui/grid.py: no rich on this path, issue 25)."""
    from reclaunch.ui import grid

    m, s, c = plan.memory, plan.step, plan.cost
    where = (f"{plan.nodes} x {plan.instance_type} ({plan.cloud} {plan.region}), "
             f"{plan.world_size} x {plan.gpu} {plan.gpu_memory_gib:g} GiB"
             if plan.instance_type else
             f"{plan.nodes} x {plan.gpus_per_node} CPU process(es) on this machine (cloud: local)")
    per = "GPU" if plan.instance_type else "process"     # cloud: local runs CPU processes
    head = [("cluster", where)]
    if getattr(plan.offer, "node_names", None):   # cloud: kubernetes: what was read, and how
        head.append(("nodes", plan.offer.source))   # from the cluster: grid shows it inert
    if plan.pick_reason:
        head.append(("picked", plan.pick_reason))
    head.append(("fabric", plan.fabric))
    if plan.stack:
        from reclaunch.planner.stack_view import line

        head.append(("stack", line(plan.stack, _rate)))
    head.append(("parallelism", f"{m.parallelism} (needs {m.gpus_needed or 'no'} "
                 f"{'process(es)' if per == 'process' else 'GPU(s)'}; "
                 f"embeddings {m.total_embedding_bytes / GIB:.2f} GiB in all)"))
    head.append(("fits", ("yes" if m.fits else "NO") + f": {m.total_bytes_per_gpu / GIB:.2f} of "
                 f"{m.capacity_bytes_per_gpu / GIB:.1f} GiB per {per}"))
    head.append(("throughput", _throughput(plan) + _span(plan.throughput_range, _rate)))
    head.append(("duration", _dur(plan.duration_hours * 3600) + (
        f" (startup {_dur(plan.startup.seconds)} included)" if plan.startup is not None else "")
        + _span(plan.duration_hours_range, lambda v: _dur(v * 3600))))
    if plan.startup is not None and plan.startup.steps:
        head.append(("startup", _startup(plan.startup)))
    od = c.on_demand_total_usd
    if plan.instance_type is None:   # cloud: local: CPU processes here, nothing to pay
        head.append(("cost", "none: CPU processes on this machine"))
    else:
        head.append(("cost on-demand", f"{_usd(od)} ({_usd(c.on_demand_usd_per_hour)}/h)"
                     + _span(c.on_demand_total_usd_range, _usd)))
        head.append(("cost spot", f"{_usd(c.spot_total_usd)} mean" + _span(c.spot_total_usd_range, _usd)
                     + f"; reclaims alone: P50 {_usd(c.spot_p50_usd)}, P90 {_usd(c.spot_p90_usd)} "
                     f"({c.expected_reclaims:.2f} reclaims expected)"))
        head.append(("line items", f"control plane {_usd(c.control_plane_usd)}, "
                                   f"storage {_usd(c.storage_usd)}"))
        head.append(("prices", f"as of {c.price_as_of or '-'}" + (" (STALE)" if c.stale else "")))
    if plan.range_covers:
        head.append(("P10-P90 covers", "; ".join(plan.range_covers)))
    out = grid.pairs(head, width=width, title=f"plan: {plan.name}", bold=bold)

    right = lambda *names: [(n, "right") for n in names]  # noqa: E731
    out += grid.boxed(
        right("embeddings", "dense", "gradients", "optimizer", "activations", "reserve", "total"),
        [[f"{b / GIB:.2f}" for b in (m.embedding_bytes, m.dense_bytes, m.gradient_bytes,
                                     m.optimizer_bytes, m.activation_bytes,
                                     m.reserve_bytes, m.total_bytes_per_gpu)]],
        width=width, title=f"memory per {per} (GiB)", bold=bold)
    # embeddings + dense + exposed comm + overhead = total: the overhead is what the GPU waits
    # for the host (launches + per-step host work, planner/perf.py host_work) or the input.
    other = s.total_seconds - s.embedding_seconds - s.dense_compute_seconds - s.exposed_comm_seconds
    out += grid.boxed(
        right("embeddings", "dense", "all-reduce", "all-to-all", "exposed comm", "overhead", "total"),
        [[f"{v * 1e3:.2f}" for v in (s.embedding_seconds, s.dense_compute_seconds,
                                     s.allreduce_seconds, s.alltoall_seconds,
                                     s.exposed_comm_seconds, max(other, 0.0), s.total_seconds)]],
        width=width, title="step time (ms)", bold=bold,
        caption=("job.embedding_overlap: full: embeddings and their all-to-all run beside the "
                 "dense compute; total = the longer path + exposed all-reduce + overhead"
                 if plan.spec.job.embedding_overlap == "full" else "")   # the parts overlap: no sum
        + (("; " if plan.spec.job.embedding_overlap == "full" else "")
           + f"overhead: the GPU waiting for the host, which issues the step in "
           f"{s.host_seconds * 1e3:.2f} ms (launches + per-step work), or for the input"
           if plan.instance_type is not None else "") or None)
    out += _sharding_lines(plan, width, bold)
    out += grid.items(list(plan.warnings), mark="!", title="warnings", width=width)
    return out


def _throughput(plan) -> str:
    """The priced figure and what it stands on: a measured run (with the model beside it) or
    the model (for cloud: local, calibrated on this host or not)."""
    b = plan.throughput_basis or {}
    text = f"{_rate(plan.throughput_samples_per_second)} samples/s"
    if b.get("kind") == "measured":
        model = plan.throughput_model_samples_per_second
        spread = b.get("spread")
        out = (f" MEASURED ({b.get('source')}, {str(b.get('measured_at'))[:10]}"
               + (f"; runs {spread[0]:.2f}-{spread[1]:.2f}x of their median" if spread else "")
               + (f"; {len(b['excluded'])} left out: {b['excluded'][-1]}" if b.get("excluded") else "")
               + f"); model {_rate(model) if model else '-'}; priced at the measured rate")
        return text + out
    seen = b.get("measured_runs")
    text += (f" (model; {b['source']})" if plan.instance_type is None and b.get("source") else " (model)")
    if seen:
        text += (f"; {seen['runs']} measured run(s) not clean, {_rate(seen['samples_per_s'])}: "
                 f"{seen['excluded'][-1]}")
    return text


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


def _sharding_lines(plan, width: int, bold: bool) -> list[str]:
    """The per-table plan and what it predicts per rank (memory, lookups, all-to-all)."""
    from reclaunch.ui import grid

    sh = plan.sharding
    if sh is None:
        return []
    cols = [("table", "left"), ("rows", "right"), ("dim", "right"), ("lookups", "right"),
            ("sharding", "left"), ("kernel", "left"), ("ranks", "left"),
            ("GiB / rank", "right"), ("ms / step", "right")]
    rows = [[x.name + (" (seq)" if x.sequence else ""), f"{x.rows:,}", str(x.dim),
             f"{x.pooling_factor:g}", x.sharding_type + (" (pinned)" if x.pinned else ""),
             x.compute_kernel, _ranks(x.ranks, sh.world_size),
             f"{x.memory_bytes_per_rank / GIB:.2f}", f"{x.step_seconds_per_rank * 1e3:.3f}"]
            for x in sh.tables]
    out = grid.boxed(cols, rows, width=width, title="sharding per table (TorchRec)", bold=bold)
    ranks = sh.per_rank
    if len(ranks) > MAX_RANK_ROWS:     # the slowest, the fastest and the fullest stand for the rest
        keep = {sh.critical_rank, min(ranks, key=lambda x: x.seconds).rank,
                max(ranks, key=lambda x: x.memory_bytes).rank}
        ranks = [x for x in ranks if x.rank in keep]
    rows = [[f"{x.rank}" + (" (slowest)" if x.rank == sh.critical_rank and len(sh.per_rank) > 1 else ""),
             str(x.tables), f"{x.memory_bytes / GIB:.2f}", f"{x.lookup_seconds * 1e3:.3f}",
             f"{x.comm_seconds * 1e3:.3f}", f"{x.seconds * 1e3:.3f}"] for x in ranks]
    out += grid.boxed([(c, "right") for c in ("rank", "shards", "memory GiB", "lookups ms",
                                              "all-to-all ms", "total ms")], rows, width=width,
                      title="predicted per rank (embedding part of the step)", bold=bold,
                      caption=f"{len(ranks)} of {len(sh.per_rank)} ranks shown (`plan --json` lists all)"
                      if len(ranks) < len(sh.per_rank) else None)
    return out + grid.items(list(sh.explanation), width=width)


def render_plan(plan, width: int = 110, bold: bool = False) -> str:
    """`plan`'s text: plain, or with bold labels and headers (the CLI: grid.bold_ok())."""
    return "\n".join(plan_lines(plan, width, bold)) + "\n"


def compare_lines(rows: list, top: int | None = 10, width: int = 140,
                  bold: bool = False) -> list[str]:
    """The recommendation first, then the `top` cheapest rows (None: all)."""
    from reclaunch.ui import grid

    shown = rows if top is None else rows[:top]
    # the recommendation is always a row of the table, even when cheaper alternatives fill the top
    shown = shown + [r for r in rows if r.recommended and r not in shown]
    cols = [("#", "right"), ("instance", "left"), ("region", "left"), ("nodes", "right"),
            ("fits", "left"), ("samples/s", "right"), ("hours", "right"),
            ("on-demand $", "right"), ("spot $", "right"), ("P90 $", "right"), ("note", "left")]
    # How a row was sized is said once, in the caption; a row sized to the fewest nodes that
    # fit carries only a mark (the note column stays for what is particular to the row).
    fewest = [r for r in shown if r.sizing == "fewest"]
    mark = "*" if fewest and len(fewest) < len(shown) else ""
    table = []
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
        if not r.pinned:
            note.append("alternative")
        if r.host_bound:
            note.append("host-bound")
        if r.overlaps:
            note.append("range overlaps")
        table.append([str(r.rank), f"{p.cloud} {p.instance_type}", p.region or "-",
                      f"{p.nodes} ({p.world_size} GPU)" + (mark if r.sizing == "fewest" else ""),
                      "yes" if p.memory.fits else "NO",
                      _rate(p.throughput_samples_per_second), f"{p.duration_hours:.2f}",
                      _usd(p.cost.on_demand_total_usd), _usd(p.cost.spot_total_usd), _usd(r.p90_usd),
                      ", ".join(note)])
    captions = ([f"{mark + ' ' if mark else ''}nodes: the fewest the model fits on"
                 + (", the others the spec's GPU count" if mark else "")] if fewest else [])
    if len(shown) < len(rows):
        captions.append(f"{len(shown)} of {len(rows)} offers shown (--top N, --top 0 for all)")
    return [*grid.wrap(f"recommendation: {recommendation_line(rows)}", width),
            *grid.boxed(cols, table, width=width, bold=bold, caption="; ".join(captions) or None,
                        title="whole-job cost by offer" + (f" (ranked by {rows[0].basis} P90)" if rows else ""))]


def recommendation_line(rows: list) -> str:
    """One line: the cheapest offer that fits, in the project's money format."""
    best = next((r for r in rows if r.recommended), None)
    if best is None:
        return "no priced offer fits this job: run `reclaunch catalog refresh` or shrink the model"
    from reclaunch.planner.sizing import why

    p = best.plan
    text = (f"{p.nodes} x {p.instance_type} ({p.cloud} {p.region}, {p.world_size} x {p.gpu}): "
            f"{_usd(best.usd)} {best.basis} (P90 {_usd(best.p90_usd)}), {p.duration_hours:.2f} h")
    reason = why(p, [r.plan for r in rows], best.basis == "spot", head=False)   # price, scaling, memory
    if reason:
        text += f" ({reason})"
    text += _caveats(best, rows)
    spec_rows = [r for r in rows if r.sizing == "spec" and r.plan.memory.fits and r.usd is not None]
    if best.sizing == "fewest" and spec_rows:
        alt = spec_rows[0]
        text += (f"; fewer nodes win: scaling is poor, {alt.plan.nodes} x {alt.plan.instance_type} "
                 f"would cost {_usd(alt.usd)} for {alt.plan.duration_hours:.2f} h")
    return text


def _caveats(best, rows: list) -> str:
    """What the reader must know before trusting the ranking: a cheaper row outside what the
    spec pins, a host-bound step, cost ranges that overlap (the order among them is within the
    model's error)."""
    text = ""
    cheaper = next((r for r in rows if r.rank < best.rank and not r.pinned and r.usd is not None
                    and r.plan.memory.fits), None)
    if cheaper is not None:
        q = cheaper.plan
        text += (f"; kept to the spec's gpu/instance_type: {q.nodes} x {q.instance_type} ({q.gpu}) "
                 f"would cost {_usd(cheaper.p90_usd)} at P90 for {q.duration_hours:.2f} h (an alternative)")
    if best.host_bound:
        text += "; its step is host-bound (a faster GPU would not run it faster; see `plan`)"
    n = sum(r.overlaps for r in rows)
    if n:
        text += f"; {n} other row(s) have cost ranges overlapping it: their order is within the model's error"
    return text


def render_compare(rows: list, width: int = 140, top: int | None = 10, bold: bool = False) -> str:
    return "\n".join(compare_lines(rows, top, width, bold)) + "\n"


def show_plan(plan: "Plan", out: Any, problem: str | None) -> None:
    """The cost table and the resources `up` is about to create."""
    from rich.table import Table

    from reclaunch.ui.text import shown   # a cluster you bring names its groups: text, not markup
    c = plan.cost
    t = Table(title=shown(f"{plan.name}: {plan.nodes} x {plan.instance_type} in {plan.region}"
                          f"{' (' + ', '.join(plan.zones) + ')' if plan.zones else ''}"))
    for col in ("", "per hour", "whole job"):
        t.add_column(col, justify="right" if col else "left")
    money = lambda v: _usd(v) if v is not None else "-"  # noqa: E731
    t.add_row("on-demand", money(c.on_demand_usd_per_hour), money(c.on_demand_total_usd))
    t.add_row("spot", money(c.spot_usd_per_hour), money(c.spot_total_usd))
    t.add_row("budget.max_usd", "", money(plan.spec.budget.max_usd))
    out.print(t)
    st = plan.spec.storage
    if getattr(plan.offer, "node_names", None):   # cloud: kubernetes: a cluster you bring
        out.print(shown(f"resources: none created; the launch goes to namespace {plan.spec.namespace} "
                        f"on {plan.nodes} of the existing nodes of group {plan.offer.group}; "
                        f"~{plan.duration_hours:.1f} h"))
    else:
        out.print(shown(f"resources: Kubernetes cluster + node pool of {plan.nodes} x {plan.instance_type} "
                        f"({plan.gpus_per_node} x {plan.gpu}, {'spot' if plan.spot else 'on-demand'}), "
                        f"storage {st.kind}{' ' + _storage_size(st) if st.size else ''}; "
                        f"prices as of {c.price_as_of}; ~{plan.duration_hours:.1f} h"))
    if problem:
        out.print(f"[yellow]budget: {shown(problem)}[/yellow]")
