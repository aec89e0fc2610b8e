"""Real processes: each test gets its own RECLAUNCH_HOME and must leave nothing running."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from reclaunch.spec import parse_spec

REPO = Path(__file__).resolve().parents[2]


def local_plan(spec):
    """make_plan(spec) when the planner is there; else the fields the local provider reads."""
    try:
        from reclaunch.planner import make_plan
    except ImportError:
        make_plan = None
    if make_plan is not None:
        return make_plan(spec)
    return SimpleNamespace(spec=spec, name=spec.name, cloud="local", nodes=spec.nodes,
                           min_nodes=spec.min_nodes, max_nodes=spec.max_nodes,
                           gpus_per_node=spec.gpus_per_node, world_size=spec.nodes * spec.gpus_per_node,
                           spot=spec.spot.enabled, nccl_env={}, dataloader_workers=0)


def make_spec(name: str, *, command=None, args=None, nodes=2, min_nodes=1, max_nodes=2,
              every_minutes=0.5, max_restarts=3, teardown="on_completion", env=None):
    import yaml

    doc = {
        "name": name, "cloud": "local", "nodes": nodes, "gpus_per_node": 1,
        "storage": {"kind": "hostpath"}, "spot": {"enabled": True},
        "autoscaling": {"min_nodes": min_nodes, "max_nodes": max_nodes},
        "job": {"command": command or ["python", "examples/trainer/train.py"],
                "args": args if args is not None else ["--model", "deepfm", "--steps", "200", "--log-every", "20"],
                "batch_size": 128, "precision": "fp32", "optimizer": "adam", "max_restarts": max_restarts,
                "env": env or {}, "checkpoint": {"path": "ckpt", "every_minutes": every_minutes},
                "dataset": {"samples": 51200}},
        "model": {"preset": "deepfm", "embedding_dim": 8,
                  "tables": [{"name": "user", "rows": 5000}, {"name": "item", "rows": 2000},
                             {"name": "cat", "rows": 100}], "mlp": [32, 16]},
        "teardown": {"when": teardown},
    }
    return parse_spec(yaml.safe_dump(doc), f"{name}.yaml")


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("RECLAUNCH_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(REPO)
    yield tmp_path / "home"
    # belt and braces: a failed test must not leave processes behind for the next one
    from reclaunch.providers.local import proc as lp

    for d in (tmp_path / "home" / "local").glob("*"):
        lp.kill_marked(lp.MARKER, lp.run_marker(d.name), 2.0)


@pytest.fixture
def helpers():
    return SimpleNamespace(REPO=REPO, local_plan=local_plan, make_spec=make_spec)


@pytest.fixture
def provider():
    from reclaunch.providers.local.provider import LocalProvider

    return LocalProvider()
