"""GCP: GKE through stacks/gcp. Credentials, capacity/quota error table, fallback policy."""

from __future__ import annotations

import os
from pathlib import Path

from reclaunch.providers.kubecloud import (CAPACITY, QUOTA, SPOT_CAPACITY, SPOT_QUOTA, Answer,
                                           CloudSpec, KubeCloudProvider)

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


def env_project(env=None) -> str | None:
    env = os.environ if env is None else env
    return env.get("GOOGLE_CLOUD_PROJECT") or env.get("CLOUDSDK_CORE_PROJECT") or None


def credentials(env=None) -> Answer:
    """Where google-auth would find credentials (a key file or JSON in the environment, the
    application default credentials gcloud wrote, the metadata server) and the project, as
    `up` and `check` see them. Without a project in the environment: "cannot tell" (the
    credentials or gcloud's config may carry one)."""
    env = os.environ if env is None else env
    key = env.get("GOOGLE_APPLICATION_CREDENTIALS") or env.get("GOOGLE_CREDENTIALS")
    conf = Path(env.get("CLOUDSDK_CONFIG") or Path(env.get("HOME", "~")) / ".config" / "gcloud")
    adc = conf.expanduser() / "application_default_credentials.json"
    if key and key.lstrip().startswith("{"):
        found = "a service-account key in the environment"
    elif key:
        if not Path(key).expanduser().is_file():
            return Answer(False, f"GOOGLE_APPLICATION_CREDENTIALS={key} (no such file)",
                          "point it at a key file")
        found = f"GOOGLE_APPLICATION_CREDENTIALS={key}"
    elif adc.is_file():
        found = f"application default credentials in {adc}"
    elif env.get("GCE_METADATA_HOST"):
        found = "the metadata server (GCE_METADATA_HOST)"
    else:
        return Answer(False, "no Google Cloud credentials found",
                      "run `gcloud auth application-default login`, or set "
                      "GOOGLE_APPLICATION_CREDENTIALS to a service-account key file")
    if env_project(env):
        return Answer(True, found)
    return Answer(None, f"{found}; GOOGLE_CLOUD_PROJECT unset", "export GOOGLE_CLOUD_PROJECT=<project id>")


def stack_config(plan) -> dict[str, str]:
    cfg = {"gcp:region": plan.region} if plan.region else {}
    project = env_project()
    if project:
        cfg["gcp:project"] = project
    return cfg


def prerequisites(plan) -> list[str]:
    """The "needs a person" list, with the project's enabled APIs asked first
    (services.prerequisites) when there are credentials to ask with (`up` stops at its
    credential check first)."""
    from reclaunch.providers.gcp import services

    if credentials().ok is False:
        from stacks.gcp.prerequisites import manual_prerequisites
        return manual_prerequisites(plan)
    return services.prerequisites(plan)


CLOUD = CloudSpec(name="gcp", program="stacks.gcp.program:program",
                  sweeper="reclaunch.providers.gcp.sweep:GcpSweeper",
                  prices="reclaunch.providers.gcp.pricing:fetch_prices",
                  credentials=credentials,
                  quota_by_hand="`gcloud compute regions describe {region}` (the GPU's quota "
                                "metric, e.g. NVIDIA_H100_GPUS, or its committed/preemptible variant)",
                  errors=ERRORS, quota_fix=QUOTA_FIX, capacity_fix=CAPACITY_FIX,
                  kube_versions="reclaunch.providers.gcp.versions:offered",
                  prerequisites="reclaunch.providers.gcp.provider:prerequisites",
                  stack_config=stack_config)


def provider(**overrides) -> KubeCloudProvider:
    return KubeCloudProvider(CLOUD, env_overrides=overrides)
