"""Planner constants: read once from data/planner.yaml (numbers live in data, not code)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from reclaunch import clouds
from reclaunch.catalog import package_data, parse_yaml


def data_yaml(name: str) -> Any:
    """A YAML file of planner/data, read and parsed as the catalog reads its own data files
    (a fresh object each call: callers cache it, and _constants amends its copy)."""
    return parse_yaml(package_data(__file__, __package__, name))


def constants() -> dict[str, Any]:
    return _constants(clouds.generation())


@lru_cache(maxsize=2)
def _constants(generation: int) -> dict[str, Any]:
    """planner.yaml, with the per-cloud numbers taken from each cloud's facts (`planner`):
    spot.reclaim_rate_per_node_hour and reclaim_notice_seconds (clouds that give one),
    control_plane_usd_per_hour, bucket_prices (clouds that give them; file-system prices:
    cost.storage_rate)."""
    c = data_yaml("planner.yaml")
    per = {f.name: f.planner for f in clouds.all_facts()}
    c["spot"]["reclaim_rate_per_node_hour"] = {
        k: v["reclaim_rate_per_node_hour"] for k, v in per.items()}
    c["spot"]["reclaim_notice_seconds"] = {
        k: v["reclaim_notice_seconds"] for k, v in per.items() if v.get("reclaim_notice_seconds")}
    c["spot"]["reclaim_band"] = {k: (v.get("reclaim_band"), dict(v.get("reclaim_by_instance") or {}))
                                 for k, v in per.items()}
    c["control_plane_usd_per_hour"] = {k: v["control_plane_usd_per_hour"] for k, v in per.items()}
    c["bucket_prices"] = {k: v["bucket_prices"] for k, v in per.items() if v.get("bucket_prices")}
    return c


def dtype_bytes(name: str) -> int:
    return int(constants()["dtype_bytes"][name])
