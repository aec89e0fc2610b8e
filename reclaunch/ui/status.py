"""`reclaunch status` as a table (rich imported here, never at CLI start-up)."""

from __future__ import annotations

from typing import Iterable


def _elapsed(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    h, rem = divmod(int(seconds), 3600)
    return f"{h}h{rem // 60:02d}m" if h else f"{rem // 60}m{rem % 60:02d}s"


def status_table(statuses: Iterable):
    from rich.table import Table

    t = Table(title="reclaunch clusters")
    for col in ("name", "cloud", "state", "nodes", "pods", "elapsed", "spend", "message"):
        t.add_column(col, overflow="fold")
    colour = {"Succeeded": "green", "Running": "cyan", "Failed": "red", "Restarting": "yellow"}
    for s in statuses:
        caps: dict[str, int] = {}
        for n in s.nodes:
            caps[n.get("capacity_type", "?")] = caps.get(n.get("capacity_type", "?"), 0) + 1
        nodes = ", ".join(f"{v} {k}" for k, v in sorted(caps.items())) or "-"
        pods = f"{sum(1 for p in s.pods if p.get('phase') == 'Running')}/{len(s.pods)} running" if s.pods else "-"
        spend = "-" if s.spend_usd is None else f"${s.spend_usd:,.2f}"
        t.add_row(s.name, s.cloud, f"[{colour.get(s.state, 'white')}]{s.state}[/]", nodes, pods,
                  _elapsed(s.elapsed_seconds), spend, (s.message or "")[:200])
    return t
