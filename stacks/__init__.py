"""Pulumi programs, one package per cloud, each exposing `program(plan)`.

The registry maps a cloud to its program module; nothing else branches on the cloud name.
Importing this package imports no Pulumi SDK: each program requires its SDK when it runs.
"""

from __future__ import annotations

import importlib
from typing import Callable

PROGRAMS: dict[str, str] = {
    "aws": "stacks.aws.program",
    "azure": "stacks.azure.program",
    "gcp": "stacks.gcp.program",
}

# The pip extra that brings each cloud's Pulumi SDK (reclaunch.errors.require names it).
EXTRAS: dict[str, str] = {"aws": "aws", "azure": "azure", "gcp": "gcp"}


def _package(cloud: str):
    if cloud not in PROGRAMS:
        return None
    return importlib.import_module(f"stacks.{cloud}")   # pure: pools, prerequisites


def node_pools(plan) -> list:
    """Contract 3: the cluster's node pools ([] for targets with no stack, e.g. local)."""
    pkg = _package(plan.cloud)
    return pkg.node_pools(plan) if pkg else []


def manual_prerequisites(plan) -> list[str]:
    """What a person must do before `up` on this cloud (quotas, feature registrations,
    reservations bought); `up` prints these before it creates anything."""
    pkg = _package(plan.cloud)
    return pkg.manual_prerequisites(plan) if pkg else []


def job_placement(plan) -> dict:
    """Extra nodeSelector/tolerations a job pod needs on this cloud's GPU pools."""
    pkg = _package(plan.cloud)
    return pkg.job_placement(plan) if pkg else {"node_selector": {}, "tolerations": []}


def load_program(cloud: str) -> Callable:
    """`program(plan)` for a cloud; a ValueError names the clouds that have one."""
    try:
        module = PROGRAMS[cloud]
    except KeyError:
        raise ValueError(f"no Pulumi program for cloud {cloud!r} "
                         f"(have: {', '.join(sorted(PROGRAMS))})") from None
    return importlib.import_module(module).program
