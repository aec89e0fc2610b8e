"""Planner constants: read once from data/planner.yaml (numbers live in data, not code)."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any


@lru_cache(maxsize=1)
def constants() -> dict[str, Any]:
    import yaml

    text = resources.files(__package__).joinpath("data", "planner.yaml").read_text()
    # libyaml's loader when present: the pure-Python one costs ~10 ms per CLI call.
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def dtype_bytes(name: str) -> int:
    return int(constants()["dtype_bytes"][name])
