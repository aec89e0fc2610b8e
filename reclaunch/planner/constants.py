"""Planner constants: read once from data/planner.yaml (numbers live in data, not code)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any


def data_text(name: str) -> str:
    """A file of planner/data: a plain read on a normal install; importlib.resources (~7 ms
    to import, on every `plan`) only when the package runs from a zip."""
    path = Path(__file__).with_name("data") / name
    if path.is_file():
        return path.read_text()
    from importlib import resources

    return resources.files(__package__).joinpath("data", name).read_text()


@lru_cache(maxsize=1)
def constants() -> dict[str, Any]:
    import yaml

    text = data_text("planner.yaml")
    # libyaml's loader when present: the pure-Python one costs ~10 ms per CLI call.
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def dtype_bytes(name: str) -> int:
    return int(constants()["dtype_bytes"][name])
