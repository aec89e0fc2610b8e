"""`up --dry-run` and the "needs a person" list, as a person reads them: the plan in a few
lines, what a person must do first, then what `up` would create (the YAML only on request)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

GIB = 1 << 30


def summary_lines(plan: "Plan") -> list[str]:
    """The plan in four lines: where, fit, time and money."""
    from reclaunch.ui.money import usd

    m, c = plan.memory, plan.cost
    if plan.instance_type:
        where = (f"{plan.nodes} x {plan.instance_type} ({plan.cloud} {plan.region}), "
                 f"{plan.world_size} x {plan.gpu}" + (", spot" if plan.spot else ", on-demand"))
        per = "GPU"
        def rng(r) -> str:   # the plan's P10-P90 (planner/uncertainty.py)
            return f" [P10-P90 {usd(r[0])} - {usd(r[1])}]" if r else ""
        money = (f"cost: {usd(c.on_demand_total_usd)} on-demand{rng(c.on_demand_total_usd_range)}, "
                 f"{usd(c.spot_total_usd)} spot{rng(c.spot_total_usd_range)} "
                 f"(prices as of {c.price_as_of or '-'}"
                 + (", STALE: `reclaunch catalog refresh`" if c.stale else "") + ")")
    else:
        where = (f"{plan.nodes} simulated node(s) x {plan.gpus_per_node} CPU process(es) on this "
                 "machine (cloud: local)")
        per = "process"
        money = "cost: none (this machine)"
    return [f"plan: {plan.name}: {where}",
            f"fits: {'yes' if m.fits else 'NO'}: {m.total_bytes_per_gpu / GIB:.2f} of "
            f"{m.capacity_bytes_per_gpu / GIB:.1f} GiB per {per}",
            f"duration: ~{_hours(plan.duration_hours)}" + (
                f" [P10-P90 {_hours(plan.duration_hours_range[0])} - {_hours(plan.duration_hours_range[1])}]"
                if plan.duration_hours_range else ""),
            money]


def _hours(h: float) -> str:
    """0.024 h -> '1.5 min', 0.0005 h -> '2 s': a short job is not '0.00 h'."""
    if h >= 1:
        return f"{h:.2f} h"
    return f"{h * 60:.1f} min" if h * 60 >= 1 else f"{max(h * 3600, 1):.0f} s"


def person_lines(needs: list[str], width: int | None = None) -> list[str]:
    """"What needs a person" (quotas with their codes, registrations, reservations); each item
    wrapped to `width` with its continuation lines under its text (None: one line each)."""
    if not needs:
        return []
    from reclaunch.ui.grid import wrap

    items = [line for n in needs
             for line in ([f"  - {n}"] if width is None else wrap(f"  - {n}", width, indent="    "))]
    return ["what needs a person first (reclaunch cannot do these):", *items]


def object_lines(objects: list[dict[str, Any]], job: dict[str, Any] | None) -> list[str]:
    out = [f"Kubernetes objects `up` applies after provisioning ({len(objects) + bool(job)}):"]
    for o in [*objects, *([job] if job else [])]:
        md = o.get("metadata") or {}
        ns = f"{md['namespace']}/" if md.get("namespace") else ""
        last = " (applied last)" if o is job else ""
        out.append(f"  {o.get('kind')} {ns}{md.get('name')}{last}")
    return out


def local_lines(commands: list[list[str]], env: dict[str, str]) -> list[str]:
    import shlex

    out = [f"cloud: local runs {len(commands)} torchrun agent(s) on this machine "
           "(no Kubernetes objects):"]
    out += [f"  node {i}: {shlex.join(cmd)}" for i, cmd in enumerate(commands)]
    mine = sorted(k for k in env if k.startswith("RECLAUNCH_"))
    out.append(f"  with {len(env)} environment variables ({', '.join(mine[:6])}"
               + (", ..." if len(mine) > 6 else "") + ")")
    return out


def dry_run_text(plan: "Plan", needs: list[str], body: list[str], file: str) -> str:
    lines = ["reclaunch up --dry-run: nothing created.", *summary_lines(plan)]
    for w in plan.warnings:
        lines.append(f"! {w}")
    lines += person_lines(needs) + body
    lines.append(f"the full YAML: `reclaunch up {file} --dry-run -o yaml`, or --out DIR for one "
                 "file per object")
    return "\n".join(lines) + "\n"
