"""The planner: memory, parallelism, step time, throughput and whole-job cost. Pure, offline.

    plan = make_plan(spec)                    # picks the cheapest fitting offer when needed
    rows = compare(spec, same_cloud=False)    # every offer that can run the job, by cost

Showing a plan is reclaunch.ui.plan (render_plan, render_compare); the planner returns values.
"""

from __future__ import annotations

from reclaunch.errors import PlanError
from reclaunch.planner.model import Comm, Cost, Memory, Plan, StepTime
from reclaunch.planner.core import make_plan, over_budget

__all__ = ["Comm", "Comparison", "Cost", "Memory", "Plan", "PlanError", "StepTime", "compare",
           "make_plan", "over_budget"]


def __getattr__(name: str):
    import importlib

    if name in ("compare", "Comparison"):
        return getattr(importlib.import_module("reclaunch.planner.ranking"), name)
    raise AttributeError(name)
