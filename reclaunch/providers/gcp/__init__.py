"""GCP: GKE through stacks/gcp. Credentials, capacity/quota error table, fallback policy."""

from __future__ import annotations

import os
from pathlib import Path

from reclaunch.providers.kubecloud import (CAPACITY, QUOTA, SPOT_CAPACITY, SPOT_QUOTA, CloudSpec,
                                           KubeCloudProvider)

ERRORS: list[tuple[str, str]] = [
    (r"(PREEMPTIBLE|SPOT)_[A-Z_]*\b.*(quota|exceeded)|Quota '(PREEMPTIBLE|SPOT)", SPOT_QUOTA),
    (r"spot.*(stockout|not available)", SPOT_CAPACITY),
    (r"ZONE_RESOURCE_POOL_EXHAUSTED|GCE_STOCKOUT|does not have enough resources available|"
     r"resource pool exhausted", CAPACITY),
    (r"QUOTA_EXCEEDED|Quota '[A-Z_0-9]+' exceeded|quotaExceeded|Insufficient regional quota",
     QUOTA),
]

QUOTA_FIX = ("request more quota for this GPU in the region: "
             "https://console.cloud.google.com/iam-admin/quotas")
CAPACITY_FIX = ("add zones to `zones:`, enable `spot.fallback: on-demand`, or use a reservation "
                "/ another region")


def credentials() -> tuple[str, str] | None:
    env = os.environ
    f = env.get("GOOGLE_APPLICATION_CREDENTIALS") or env.get("GOOGLE_CREDENTIALS")
    if f and (f.lstrip().startswith("{") or Path(f).expanduser().is_file()):
        return None
    cfg = Path(env.get("CLOUDSDK_CONFIG", "~/.config/gcloud")).expanduser()
    if (cfg / "application_default_credentials.json").is_file():
        return None
    if env.get("GCE_METADATA_HOST"):
        return None
    return ("no Google Cloud credentials found",
            "run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS "
            "to a service-account key file")


def stack_config(plan) -> dict[str, str]:
    cfg = {"gcp:region": plan.region} if plan.region else {}
    project = os.environ.get("GOOGLE_CLOUD_PROJECT") or os.environ.get("CLOUDSDK_CORE_PROJECT")
    if project:
        cfg["gcp:project"] = project
    return cfg


CLOUD = CloudSpec(name="gcp", program="stacks.gcp.program:program",
                  sweeper="reclaunch.providers.gcp.sweep:GcpSweeper",
                  prices="reclaunch.providers.gcp.pricing:fetch_prices", pip_extra="gcp",
                  credentials=credentials,
                  errors=ERRORS, quota_fix=QUOTA_FIX, capacity_fix=CAPACITY_FIX,
                  kube_versions="reclaunch.providers.gcp.versions:offered",
                  prerequisites="reclaunch.providers.gcp.services:prerequisites",
                  stack_config=stack_config)


def provider(**overrides) -> KubeCloudProvider:
    return KubeCloudProvider(CLOUD, env_overrides=overrides)
