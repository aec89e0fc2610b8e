"""`reclaunch diagnose` as tables (rich imported here, never at CLI start-up).

Renders the JSON object `Diagnosis.to_json()` returns, so the table and `--json` can never
tell different stories.
"""

from __future__ import annotations

from typing import Any

_COLOUR = {"critical": "red", "warning": "yellow", "info": "cyan"}


def fmt(value: Any, unit: str) -> str:
    try:
        return _fmt(value, unit)
    except (TypeError, ValueError, OverflowError):   # a value no parser bounded: as text
        return str(value)[:40]


def _fmt(value: Any, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "s":
        return f"{value * 1e3:,.2f} ms"
    if unit == "bytes":
        return f"{value / 2**30:,.2f} GiB"
    if unit == "usd":
        from reclaunch.ui.money import usd

        return usd(value)
    if unit == "h":
        return f"{value:,.3f} h" if value < 1 else f"{value:,.1f} h"
    if unit == "samples/s":
        return f"{value:,.0f}"
    return str(value)


def ratio(planned: Any, measured: Any) -> str:
    if not isinstance(planned, (int, float)) or not isinstance(measured, (int, float)) or not planned:
        return ""
    try:
        return f"{measured / planned:.2f}x"
    except OverflowError:
        return ""


def renderables(d: dict[str, Any]) -> list[Any]:
    from rich.table import Table
    from rich.text import Text

    from reclaunch.ui.text import shown, visible   # metrics fields are the job's text

    state = "finished" if d.get("finished") else "running"
    t = Table(title=shown(f"{d['name']}: measured vs planned (step {d['step']}, world size "
                          f"{d['world_size']}, {state})"))
    for col, just in (("", "left"), ("planned", "right"), ("measured", "right"),
                      ("measured/planned", "right"), ("note", "left")):
        t.add_column(col, justify=just, overflow="fold")
    for r in d["rows"]:
        t.add_row(shown(r["what"]), shown(fmt(r["planned"], r["unit"])),
                  shown(fmt(r["measured"], r["unit"])),
                  ratio(r["planned"], r["measured"]) if r.get("comparable", True) else "",
                  shown(r.get("note") or ""))
    out: list[Any] = [t]
    if len(d.get("ranks") or []) > 1:
        rt = Table(title="per rank (median of the newest intervals)")
        for col in ("rank", "last step", "step time", "data wait", "fwd+bwd", "optimizer", "comm",
                    "peak mem", "transport"):
            rt.add_column(col, justify="left" if col == "transport" else "right")
        for r in d["ranks"]:
            rt.add_row(*(shown(c) for c in (
                str(r["rank"]), str(r["last_step"]), fmt(r["step_s"], "s"),
                fmt(r["data_wait_s"], "s"), fmt(r["fwd_bwd_s"], "s"),
                fmt(r["optimizer_s"], "s"), fmt(r["comm_s"], "s"),
                fmt(r["peak_mem_bytes"], "bytes"), r.get("transport") or "-")))
        out.append(rt)
    findings = d.get("findings") or []
    if not findings:
        out.append(Text("no findings: no rule of the table (version "
                        f"{d.get('rules_version')}) fired", style="green"))
    for i, f in enumerate(findings, 1):
        colour = _COLOUR.get(f["severity"], "white")
        head = Text(visible(f"{i}. [{f['severity']}] {f['title']}"), style=f"bold {colour}")
        body = Text()
        body.append("   seen:     ", style="dim")
        body.append(visible(f["what"]) + "\n")
        body.append("   change:   ", style="dim")
        body.append(visible(f["fix"]) + "\n")
        body.append("   expected: ", style="dim")
        body.append(visible(f["expected"]) + "\n")
        body.append("   sources:  ", style="dim")
        body.append(visible("; ".join(f.get("sources") or ()) + f" (as of {f.get('as_of')})"))
        out += [head, body]
    for n in d.get("notes") or []:
        out.append(Text(visible(f"note: {n}"), style="dim"))
    return out
