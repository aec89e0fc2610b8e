"""Planner constants: read once from data/planner.yaml (numbers live in data, not code)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from reclaunch import clouds


def data_text(name: str) -> str:
    """A file of planner/data: a plain read on a normal install; importlib.resources (~7 ms
    to import, on every `plan`) only when the package runs from a zip."""
    path = Path(__file__).with_name("data") / name
    if path.is_file():
        return path.read_text()
    from importlib import resources

    return resources.files(__package__).joinpath("data", name).read_text()


def constants() -> dict[str, Any]:
    return _constants(clouds.generation())


@lru_cache(maxsize=2)
def _constants(generation: int) -> dict[str, Any]:
    """planner.yaml, with the per-cloud numbers taken from each cloud's facts (`planner`):
    spot.reclaim_rate_per_node_hour, control_plane_usd_per_hour, storage pvc price."""
    import yaml

    text = data_text("planner.yaml")
    # libyaml's loader when present: the pure-Python one costs ~10 ms per CLI call.
    c = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    per = {f.name: f.planner for f in clouds.all_facts()}
    c["spot"]["reclaim_rate_per_node_hour"] = {
        k: v["reclaim_rate_per_node_hour"] for k, v in per.items()}
    c["control_plane_usd_per_hour"] = {k: v["control_plane_usd_per_hour"] for k, v in per.items()}
    c["storage_usd_per_gb_month"]["pvc"] = {k: v["pvc_usd_per_gb_month"] for k, v in per.items()}
    return c


def dtype_bytes(name: str) -> int:
    return int(constants()["dtype_bytes"][name])
