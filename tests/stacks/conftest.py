"""One preview per example, shared by every test in the session (mock runs are slow to import)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FILES = {"aws": "aws-deepfm-p4d.yaml", "aws-p5": "aws-auto-h100.yaml",
         "gcp": "gcp-dcnv2-a3mega.yaml", "azure": "azure-din-nd96amsr.yaml"}


def make_plan(name: str, **changes):
    from reclaunch.planner import make_plan as plan_of
    from reclaunch.spec import load_spec

    plan = plan_of(load_spec(str(EXAMPLES / FILES[name])))
    return dataclasses.replace(plan, **changes) if changes else plan


@pytest.fixture(scope="session")
def previews():
    from reclaunch.providers import preview_plan as preview

    cache: dict = {}

    def get(name: str, **changes):
        key = (name, repr(sorted(changes.items())))
        if key not in cache:
            cache[key] = (make_plan(name, **changes), preview(make_plan(name, **changes)))
        return cache[key]
    return get
