"""What `up` and `down` show while they work: the plan and what needs a person before `up`,
the engine's progress, capacity fallbacks. runtime/lifecycle.py calls these and prints
nothing itself (rich markup lives in ui/)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan


def show_before_up(plan: "Plan", out: Any, problem: str | None, needs: list[str]) -> None:
    """The cost table, then the manual prerequisites, before confirmation and before anything
    is created."""
    from reclaunch.ui.plan import show_plan

    show_plan(plan, out, problem)
    if needs:
        out.print("[bold]needs a person first[/bold] (reclaunch cannot do these):")
        from reclaunch.ui.text import shown
        for line in needs:
            out.print(f"  - {shown(line)}")


def engine_progress(out: Any) -> Callable[[dict], None]:
    """A live progress printer for the engine's event stream (runtime.infra's event dicts)."""

    from reclaunch.ui.text import shown   # resource names and engine messages: text, not markup

    def on_event(ev: dict) -> None:
        if ev.get("kind") == "resource" and ev.get("status") in ("done", "failed") \
                and not str(ev.get("type", "")).startswith("pulumi:"):
            mark = "[green]✓[/green]" if ev["status"] == "done" else "[red]✗[/red]"
            out.print(f"  {mark} " + shown(f"{ev.get('op', '')} {ev.get('type', '')} "
                                           f"{str(ev.get('urn', '')).rsplit('::', 1)[-1]}"))
        elif ev.get("kind") == "diag" and ev.get("status") == "error":
            out.print(f"  [red]{shown(ev.get('message', ''))}[/red]")
    return on_event


def show_fallback(out: Any, kind: str, label: str) -> None:
    from reclaunch.ui.text import shown
    out.print(f"[yellow]{shown(f'{kind}: trying {label}')}[/yellow]")
