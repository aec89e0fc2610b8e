"""`reclaunch status` as a table (rich imported here, never at CLI start-up)."""

from __future__ import annotations

from typing import Iterable


def _elapsed(seconds: float | None) -> str:
    import math
    if not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds < 0:
        return "-"   # None, or damaged state (started_at: 1e308): not a duration
    h, rem = divmod(int(seconds), 3600)
    return f"{h}h{rem // 60:02d}m" if h else f"{rem // 60}m{rem % 60:02d}s"


def _vs(measured: float | None, planned: float | None, money: bool = False) -> str:
    """`measured (plan planned)`, e.g. `1,234 (plan 2,000)` or `$12.00 (plan $10.00)`."""
    from reclaunch.ui.money import usd

    f = usd if money else (lambda v: f"{v:,.0f}")  # noqa: E731
    if measured is None:
        return "-" if planned is None else f"- (plan {f(planned)})"
    return f(measured) + ("" if planned is None else f" (plan {f(planned)})")


def measured_cells(s) -> tuple[str, str]:
    """(samples/s, job cost at that rate), each beside the plan's, from details["measured"]."""
    m = (s.details or {}).get("measured") or {}
    if not m:
        return "-", "-"
    return (_vs(m.get("samples_per_s"), m.get("planned_samples_per_s")),
            _vs(m.get("projected_usd"), m.get("planned_usd"), money=True))


def status_table(statuses: Iterable, width: int | None = None):
    """`width`: the terminal's; columns are stacked two to one where they would not fit whole
    (ui/grid.stack), the message wraps. None: every column at its natural width (--wide)."""
    from rich.table import Table

    from reclaunch.ui.text import shown

    statuses = list(statuses)
    measured = any((s.details or {}).get("measured") for s in statuses)
    t = Table(title="reclaunch clusters")
    cols = ["name", "cloud", "state", "nodes", "pods", "elapsed", "spend"]
    if measured:   # the job reported RECLAUNCH_METRICS: measured rate and projection vs plan
        cols += ["samples/s", "job cost at that rate"]
    rows: list[list[str]] = []
    colour = {"Succeeded": "green", "Running": "cyan", "Failed": "red", "Restarting": "yellow"}
    for s in statuses:
        caps: dict[str, int] = {}
        for n in s.nodes:
            caps[n.get("capacity_type", "?")] = caps.get(n.get("capacity_type", "?"), 0) + 1
        nodes = ", ".join(f"{v} {k}" for k, v in sorted(caps.items())) or "-"
        pods = f"{sum(1 for p in s.pods if p.get('phase') == 'Running')}/{len(s.pods)} running" if s.pods else "-"
        spend = "-" if s.spend_usd is None else _money(s.spend_usd)
        extra = list(measured_cells(s)) if measured else []
        # name, message and cells come from state files and job output: text, never markup
        rows.append([shown(s.name), shown(s.cloud),
                     f"[{colour.get(s.state, 'white')}]{shown(s.state)}[/]",
                     shown(nodes), shown(pods), _elapsed(s.elapsed_seconds), spend,
                     *(shown(c) for c in extra), shown((s.message or "")[:200])])
    from rich.text import Text

    from reclaunch.ui.grid import floors, stack

    def measure(c: str) -> int:
        return Text.from_markup(c).cell_len

    columns = [(c, "left") for c in cols + ["message"]]
    if width is not None:
        columns, rows = stack(columns, rows, width, prose=("message",), measure=measure)
    least = floors(columns, rows, measure, prose=("message",))
    for (col, _), low in zip(columns, least):   # rich narrows a column no further than a word
        t.add_column(col, overflow="fold", no_wrap=width is None and col != "message",
                     min_width=low)
    for row in rows:
        t.add_row(*row)
    return t


def _money(v: float) -> str:
    from reclaunch.ui.money import usd

    return usd(v)
