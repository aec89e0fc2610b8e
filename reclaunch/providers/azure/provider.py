"""Azure: AKS through stacks/azure. Credentials, capacity/quota error table, fallback policy."""

from __future__ import annotations

import os
from pathlib import Path

from reclaunch.providers.azure.account import env_subscription
from reclaunch.providers.kubecloud import (CAPACITY, QUOTA, SPOT_CAPACITY, SPOT_QUOTA, Answer,
                                           CloudSpec, KubeCloudProvider)

ERRORS: list[tuple[str, str]] = [
    (r"LowPriorityCores|low.?priority.*quota|spot.*quota", SPOT_QUOTA),
    (r"SpotVM.*(Capacity|NotAvailable)|EvictionPolicy.*capacity", SPOT_CAPACITY),
    (r"SkuNotAvailable|ZonalAllocationFailed|AllocationFailed|"
     r"OverconstrainedAllocationRequest|OverconstrainedZonalAllocationRequest", CAPACITY),
    (r"QuotaExceeded|exceed(ing)? approved .*quota|OperationNotAllowed.*quota|"
     r"InsufficientVCPUQuota", QUOTA),
]

QUOTA_FIX = ("request more vCPUs for this VM family (Help + support > Service and subscription "
             "limits, or `az quota create`)")
CAPACITY_FIX = ("add zones to `zones:`, enable `spot.fallback: on-demand`, or try another region "
                "(`az vm list-skus --location REGION --size SIZE` shows restrictions)")


def credentials(env=None) -> Answer:
    """Which identity the SDKs would use (a service principal or managed identity in the
    environment, else the az CLI's login) and the subscription, as `up` and `check` see them.
    Whether a token is still valid needs a call: that is "cannot tell", not a failure."""
    env = os.environ if env is None else env
    if (env.get("AZURE_CLIENT_ID") or env.get("ARM_CLIENT_ID")) and \
            (env.get("AZURE_TENANT_ID") or env.get("ARM_TENANT_ID")):
        who = "a service principal in the environment"
    elif env.get("ARM_USE_MSI") or env.get("IDENTITY_ENDPOINT") or env.get("MSI_ENDPOINT"):
        who = "a managed identity"
    elif (cfg := Path(env.get("AZURE_CONFIG_DIR", "~/.azure")).expanduser()).joinpath(
            "azureProfile.json").is_file() and any(cfg.glob("msal_token_cache*")):
        who = "the az CLI's login"
    else:
        return Answer(False, "no Azure credentials found",
                      "run `az login` (and `az account set -s SUBSCRIPTION`), or set "
                      "AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_CLIENT_SECRET")
    sub = env_subscription(env)
    if not sub:
        return Answer(False, "AZURE_SUBSCRIPTION_ID is not set",
                      "export AZURE_SUBSCRIPTION_ID=<id> (`az account show --query id -o tsv`)")
    return Answer(None, f"subscription {sub}; {who} would be used: cannot tell whether it is "
                  "signed in without a call", "az account show")


def stack_config(plan) -> dict[str, str]:
    cfg = {"azure-native:location": plan.region} if plan.region else {}
    sub = env_subscription()
    if sub:
        cfg["azure-native:subscriptionId"] = sub
    from reclaunch.providers.azure.host_encryption import stack_config as host_encryption
    cfg.update(host_encryption(plan))     # reclaunch:encryptionAtHost, from Azure's answer
    kind = principal_type()
    if kind:   # the RBAC role assignment for the caller must name the right principal type
        cfg["reclaunch:principalType"] = kind
    return cfg


def principal_type(run=None) -> str | None:
    """User or ServicePrincipal for the identity `up` runs as (az account show)."""
    if os.environ.get("AZURE_CLIENT_ID") and os.environ.get("AZURE_CLIENT_SECRET"):
        return "ServicePrincipal"
    import subprocess

    try:
        out = (run or subprocess.run)(["az", "account", "show", "--query", "user.type", "-o",
                                       "tsv"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    kind = (getattr(out, "stdout", "") or "").strip()
    return {"user": "User", "servicePrincipal": "ServicePrincipal"}.get(kind)


# SkuNotAvailable is usually region-wide for a SKU, but zonal allocation failures are not.
CLOUD = CloudSpec(name="azure", program="stacks.azure.program:program",
                  sweeper="reclaunch.providers.azure.sweep:AzureSweeper",
                  prices="reclaunch.providers.azure.pricing:fetch_prices",
                  credentials=credentials,
                  quota_by_hand="`az vm list-usage --location {region} -o table` (the instance "
                                "family's vCPUs)",
                  errors=ERRORS, quota_fix=QUOTA_FIX, capacity_fix=CAPACITY_FIX,
                  kube_versions="reclaunch.providers.azure.versions:offered",
                  stack_config=stack_config,
                  prerequisites="reclaunch.providers.azure.host_encryption:prerequisites")


def provider(**overrides) -> KubeCloudProvider:
    return KubeCloudProvider(CLOUD, env_overrides=overrides)
