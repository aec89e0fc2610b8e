"""`reclaunch preview` as a table."""

from __future__ import annotations

import json
from typing import Any


def render_preview(resources: list[dict[str, Any]]) -> Any:
    """A rich Table (print it with a rich Console); `str()`-able via `preview_text`."""
    from rich.table import Table

    table = Table(title=f"{len(resources)} resources (Pulumi program under mocks)")
    for col in ("type", "name", "key properties", "tags"):
        table.add_column(col, overflow="fold")
    for r in resources:
        key = ", ".join(f"{k}={_short(v)}" for k, v in r["key"].items())
        tagged = ("-" if not r["taggable"] else
                  "ok" if _has_managed_tags(r) else "MISSING")
        table.add_row(r["type"], r["name"], key, tagged)
    return table


def render_schedule(rows: list[dict[str, Any]]) -> Any:
    """The schedulability check: each pod of the launch, the pools it fits, or why none."""
    from rich.table import Table

    bad = sum(1 for r in rows if not r["fits"])
    title = (f"{len(rows)} pods: every one has a node pool" if not bad else
             f"{len(rows)} pods: {bad} cannot be scheduled")
    table = Table(title=title)
    for col in ("pod", "role", "replicas", "pool", "fits", "why not"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["pod"], r["role"], str(r["replicas"]), r["pool"] or "-",
                      "yes" if r["fits"] else "NO", "\n".join(r["reasons"]))
    return table


def render_policy(findings: list[str]) -> Any:
    """The policy checks of stacks/policy.py over the previewed resources, as plain text."""
    from rich.text import Text

    if not findings:
        return Text("policy: every check holds (tags, private control plane, no world-open SSH, "
                    "encrypted volumes, scoped IAM, pinned GPU pools)")
    out = Text(f"policy: {len(findings)} finding(s), a reviewer would block this deploy on:\n",
               style="bold red")
    for f in findings:
        out.append(f"  - {f}\n")
    return out


def preview_text(resources: list[dict[str, Any]], width: int = 160) -> str:
    from rich.console import Console

    console = Console(width=width, record=True, file=open(__import__("os").devnull, "w"))
    console.print(render_preview(resources))
    return console.export_text()


def _short(v: Any) -> str:
    text = v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))
    return text if len(text) <= 60 else text[:57] + "..."


def _has_managed_tags(r: dict[str, Any]) -> bool:
    from reclaunch.tags import CLUSTER_TAG, MANAGED_TAG

    return {CLUSTER_TAG, MANAGED_TAG} <= set(r["tags"])
