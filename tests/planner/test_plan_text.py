"""What `plan` prints adds up: the step-time row's parts sum to its total (the fixed per-step
overhead had no column, so p4d showed 0.08 + 2.48 + 0.92 = 4.41), and the spot line says what
its count is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reclaunch.catalog import bundled_catalog
from reclaunch.planner import make_plan
from reclaunch.spec import load_spec
from reclaunch.ui.plan import render_plan

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_step_time_row_adds_up(path):
    plan = make_plan(load_spec(path), bundled_catalog())
    text = render_plan(plan, width=160)
    lines = text.splitlines()
    head = next(i for i, l in enumerate(lines) if "exposed comm" in l)
    cols = [c.strip() for c in re.split(r"[┃│]", lines[head]) if c.strip()]
    row = next(l for l in lines[head + 1:] if re.search(r"\d", l))
    vals = dict(zip(cols, (float(v) for v in re.findall(r"\d+\.\d+", row))))
    parts = vals["embeddings"] + vals["dense"] + vals["exposed comm"] + vals["overhead"]
    assert parts == pytest.approx(vals["total"], abs=0.02), vals
    if plan.instance_type is not None:   # cloud: local pays nothing: no spot line
        assert "reclaims expected)" in text
