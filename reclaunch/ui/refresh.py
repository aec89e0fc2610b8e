"""`reclaunch catalog refresh` as a table (rich) or as plain text: the catalog's refresh
returns a RefreshReport value; how it reads to a person is decided here."""

from __future__ import annotations

from reclaunch.catalog.refresh import SUSPICIOUS_PCT, FieldChange, RefreshReport


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
    for r in report_rows(report):
        t.add_row(*r[:4], Text(r[4], style="bold red") if r[4] else "")
    notes = [Text(line, style="red" if line.startswith("failed") else
                  "yellow" if "check them" in line else "") for line in report_notes(report)]
    return Group(t, *notes)


def _money(v: float | None) -> str:
    return "-" if v is None else f"{v:,.4f}".rstrip("0").rstrip(".")


def _change_cells(c: FieldChange) -> tuple[str, str]:
    arrow = f"{_money(c.old)} -> {_money(c.new)}"
    pct = "" if c.pct is None else f"{c.pct:+.1f}%"
    return arrow, pct


def report_rows(report: RefreshReport) -> list[tuple[str, str, str, str, str]]:
    out = []
    for d in report.diffs:
        shown = [c for c in d.changes if c.changed] or [d.changes[0]]
        for i, c in enumerate(shown):
            arrow, pct = _change_cells(c)
            label = "/".join(d.key) if i == 0 else ""
            flag = ("SUSPICIOUS" if d.suspicious else "") if i == 0 else ""
            out.append((label, c.field.removesuffix("_usd"), arrow,
                        pct if c.changed else "unchanged", flag))
    return out


def report_notes(report: RefreshReport) -> list[str]:
    lines = []
    if report.suspicious:
        lines.append(f"{len(report.suspicious)} row(s) moved more than {SUSPICIOUS_PCT:g}%: "
                     "check them (a wrong SKU match halves GCP A3 prices) before trusting them.")
    for f in report.failures:
        lines.append(f"failed, old prices kept: {f}")
    n = len(report.diffs)
    if report.dry_run:
        lines.append(f"dry run: {n} row(s) would be written to {report.overlay_path}")
    elif report.written:
        lines.append(f"wrote {n} row(s) dated {report.today.isoformat()} to {report.written}")
    else:
        lines.append("nothing written")
    return lines


def render_text(report: RefreshReport) -> str:
    rows = report_rows(report)
    head = ("row", "price", "old -> new", "change", "")
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(5)]
    text = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [head] + rows]
    return "\n".join(text + report_notes(report))


