"""Pulumi programs, one package per cloud, each exposing `program(plan)`.

Which program belongs to which cloud is declared once, in that cloud's CloudSpec
(reclaunch/providers/<cloud>/__init__.py). Importing this package imports no Pulumi SDK.
"""

from __future__ import annotations

import importlib

def _package(cloud: str):
    """stacks.<cloud> (pure: pools, prerequisites), or None for a target with no stack."""
    import importlib.util
    if not cloud.isidentifier() or importlib.util.find_spec(f"stacks.{cloud}") is None:
        return None
    return importlib.import_module(f"stacks.{cloud}")


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
