"""EKS: the minors in standard support, from DescribeClusterVersions
(docs.aws.amazon.com/eks/latest/APIReference/API_DescribeClusterVersions.html). Extended
support is billed per cluster hour, so those minors are never chosen."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan


def offered(plan: "Plan", client: Any = None) -> list[str]:
    if client is None:
        import boto3

        client = boto3.client("eks", region_name=plan.region)
    out: list[str] = []
    for page in client.get_paginator("describe_cluster_versions").paginate(
            versionStatus="STANDARD_SUPPORT"):
        out += [v["clusterVersion"] for v in page.get("clusterVersions", [])
                if v.get("versionStatus", "STANDARD_SUPPORT") == "STANDARD_SUPPORT"]
    return out
