"""Rank 0's progress events (proc.parse_line) folded into the supervisor's state.json
`progress`, every list bounded: state.json is rewritten every second for the whole run."""

from __future__ import annotations

from typing import Any

KEEP_LOSSES = 10_000
KEEP_EVENTS = 1_000


def apply(p: dict[str, Any], ev: dict[str, Any]) -> str:
    """Fold one event into progress `p`; -> its kind."""
    kind = ev["kind"]
    if kind in ("step", "done"):
        p.update(step=ev["step"], loss=ev["loss"], samples_per_s=ev["samples_per_s"])
        if kind == "step":
            p["losses"].append([ev["step"], ev["loss"]])
            del p["losses"][:-KEEP_LOSSES]
        else:
            p["done"] = ev
    elif kind == "start":
        p["steps"] = ev["steps"]
    elif kind in ("resumed", "checkpoint", "sigterm"):
        key = {"resumed": "resumed_from", "checkpoint": "checkpoints", "sigterm": "sigterms"}[kind]
        p[key].append(ev["step"])
        del p[key][:-KEEP_EVENTS]
    return kind
