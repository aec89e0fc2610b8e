"""`reclaunch catalog refresh` as a table."""

from __future__ import annotations

from reclaunch.catalog.refresh import RefreshReport, _footer, _lines, render_text


def render_report(report: RefreshReport):
    """A rich renderable (table + notes); plain text when rich is missing."""
    try:
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text
    except ImportError:
        return render_text(report)
    t = Table(title=f"catalog refresh {report.today.isoformat()}"
              + (" (dry run)" if report.dry_run else ""))
    for col, kw in (("row", {}), ("price", {}), ("old -> new", {"justify": "right"}),
                    ("change", {"justify": "right"}), ("", {})):
        t.add_column(col, **kw)
    for r in _lines(report):
        t.add_row(*r[:4], Text(r[4], style="bold red") if r[4] else "")
    notes = [Text(line, style="red" if line.startswith("failed") else
                  "yellow" if "check them" in line else "") for line in _footer(report)]
    return Group(t, *notes)
