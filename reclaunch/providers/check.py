"""`reclaunch check [FILE]`: a preflight of this machine, like `sky check`. Reads only: the
Pulumi CLI on PATH, the SDK extras installed, credentials each cloud's SDK would find (no
network call for that), and, for a spec, the GPU quota of its instance in its region where the
cloud's quota API can tell (AWS Service Quotas), plus what a person must do before `up`.

Each answer is ok (True), missing (False) or cannot tell (None, with how to check by hand).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

# Modules each extra brings (pyproject.toml [project.optional-dependencies]).
EXTRAS: dict[str, tuple[str, ...]] = {
    "aws": ("boto3", "pulumi", "pulumi_aws", "pulumi_kubernetes", "kubernetes"),
    "azure": ("azure.identity", "azure.mgmt.compute", "pulumi", "pulumi_azure_native",
              "pulumi_kubernetes", "kubernetes"),
    "gcp": ("google.cloud.compute_v1", "pulumi", "pulumi_gcp", "pulumi_kubernetes", "kubernetes"),
    "local": ("torch", "torchrec", "fbgemm_gpu"),
}
# How to see a GPU quota by hand where we cannot ask (or could not).
QUOTA_BY_HAND: dict[str, str] = {
    "aws": "Service Quotas console > Amazon EC2, or `aws service-quotas get-service-quota "
           "--service-code ec2 --quota-code {code} --region {region}`",
    "azure": "`az vm list-usage --location {region} -o table` (the instance family's vCPUs)",
    "gcp": "`gcloud compute regions describe {region}` (the GPU's quota metric, e.g. "
           "NVIDIA_H100_GPUS, or its committed/preemptible variant)",
}


@dataclass(frozen=True)
class Check:
    topic: str        # "pulumi", "extra aws", "credentials aws", "quota", "needs a person"
    ok: bool | None   # None: cannot tell from here
    detail: str
    fix: str | None = None
    needed: bool = True   # False: informational (another cloud than the spec's)


def _has(module: str, find_spec: Callable[[str], Any]) -> bool:
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):   # a parent package missing
        return False


def extras(find_spec: Callable[[str], Any] = importlib.util.find_spec,
           want: str | None = None) -> list[Check]:
    out = []
    for extra, mods in EXTRAS.items():
        missing = [m for m in mods if not _has(m, find_spec)]
        out.append(Check(f"extra {extra}", not missing,
                         "installed" if not missing else f"missing {', '.join(missing)}",
                         None if not missing else f"pip install 'reclaunch[{extra}]'",
                         needed=want == extra))
    return out


def aws_credentials(find_spec=importlib.util.find_spec) -> Check:
    if not _has("botocore", find_spec):
        return Check("credentials aws", None, "cannot tell: botocore is not installed",
                     "pip install 'reclaunch[aws]'")
    import botocore.session

    try:
        creds = botocore.session.get_session().get_credentials()
    except Exception as exc:  # noqa: BLE001 - a broken config file is an answer, not a crash
        return Check("credentials aws", False, f"unreadable AWS config: {exc}", "aws configure")
    if creds is None:
        return Check("credentials aws", False, "no credentials found (env, ~/.aws, SSO, role)",
                     "aws configure (or aws sso login, or AWS_PROFILE=...)")
    return Check("credentials aws", True, f"found ({getattr(creds, 'method', 'configured')})")


def azure_credentials(which=shutil.which) -> Check:
    sub = os.environ.get("AZURE_SUBSCRIPTION_ID")
    sp = all(os.environ.get(k) for k in ("AZURE_CLIENT_ID", "AZURE_TENANT_ID"))
    if not sub:
        return Check("credentials azure", False, "AZURE_SUBSCRIPTION_ID is not set",
                     "export AZURE_SUBSCRIPTION_ID=<id> (`az account show --query id -o tsv`)")
    if sp or which("az"):
        return Check("credentials azure", None, f"subscription {sub}; "
                     + ("a service principal in the environment" if sp else "the az CLI")
                     + " would be used: cannot tell whether it is signed in without a call",
                     "az account show")
    return Check("credentials azure", False, "no az CLI and no AZURE_CLIENT_ID/AZURE_TENANT_ID",
                 "az login (install the Azure CLI) or set a service principal")


def gcp_credentials(environ=os.environ) -> Check:
    path = environ.get("GOOGLE_APPLICATION_CREDENTIALS")
    if path:
        ok = Path(path).is_file()
        return Check("credentials gcp", ok, f"GOOGLE_APPLICATION_CREDENTIALS={path}"
                     + ("" if ok else " (no such file)"), None if ok else "point it at a key file")
    conf = Path(environ.get("CLOUDSDK_CONFIG") or Path(environ.get("HOME", "~")) / ".config" / "gcloud")
    adc = conf / "application_default_credentials.json"
    if adc.is_file():
        project = environ.get("GOOGLE_CLOUD_PROJECT")
        return Check("credentials gcp", True if project else None, f"application default "
                     f"credentials in {adc}" + ("" if project else "; GOOGLE_CLOUD_PROJECT unset"),
                     None if project else "export GOOGLE_CLOUD_PROJECT=<project id>")
    return Check("credentials gcp", False, "no application default credentials",
                 "gcloud auth application-default login")


def aws_quota(plan, client=None) -> Check:
    """The EC2 vCPU quota for the plan's instance family in its region (Service Quotas)."""
    from stacks.aws.prerequisites import QUOTA_CODES

    family = (plan.instance_type or "?")[:1]
    codes = QUOTA_CODES.get(family)
    need = (plan.offer.vcpus if plan.offer else 0) * plan.max_nodes
    if codes is None:
        return Check("quota", None, f"no Service Quotas code known for {plan.instance_type}")
    code = codes[1] if plan.spot else codes[0]
    by_hand = QUOTA_BY_HAND["aws"].format(code=code, region=plan.region)
    try:
        if client is None:
            import boto3
            from botocore.config import Config

            client = boto3.client("service-quotas", region_name=plan.region, config=Config(
                connect_timeout=5, read_timeout=10, retries={"max_attempts": 1}))
        from reclaunch.runtime.deadline import within   # read_timeout is per read: a total one too
        answer = within(lambda: client.get_service_quota(ServiceCode="ec2", QuotaCode=code),
                        f"AWS service-quotas in {plan.region}", key=f"service-quotas.{plan.region}")
        value = float(answer["Quota"]["Value"])
    except Exception as exc:  # noqa: BLE001 - no credentials, no network, access denied: say so
        return Check("quota", None, f"cannot tell ({type(exc).__name__}: {str(exc)[:120]})",
                     f"check by hand: {by_hand}")
    what = f"{codes[2].split(' / ')[1 if plan.spot else 0]} ({code}) in {plan.region}"
    if value >= need:
        return Check("quota", True, f"{what}: {value:g} vCPUs, {need} needed")
    return Check("quota", False, f"{what}: {value:g} vCPUs, {need} needed for {plan.max_nodes} "
                 f"x {plan.instance_type}", f"request an increase in Service Quotas, code {code}")


def quota(plan, aws_client=None) -> Check:
    if plan.spec.runs_here:
        return Check("quota", True, "cloud: local needs no quota")
    from reclaunch.providers import OWN_CLUSTERS
    if plan.cloud in OWN_CLUSTERS:
        return Check("quota", True, f"a cluster you bring: the nodes `plan` read in {plan.region}")
    if plan.cloud == "aws":
        return aws_quota(plan, aws_client)
    return Check("quota", None, f"cannot tell: {plan.cloud} has no quota API reclaunch reads",
                 "check by hand: " + QUOTA_BY_HAND[plan.cloud].format(region=plan.region, code=""))


def run_checks(plan=None, *, which=shutil.which, find_spec=importlib.util.find_spec,
               environ=os.environ, aws_client=None) -> list[Check]:
    cloud = plan.cloud if plan is not None else None
    from reclaunch.providers import OWN_CLUSTERS
    own = plan is not None and plan.cloud in OWN_CLUSTERS   # no stack: no Pulumi, no cloud login
    local = plan is not None and (plan.spec.runs_here or own)
    pulumi = which("pulumi")
    out = [Check("pulumi", bool(pulumi), pulumi or "the Pulumi CLI is not on PATH",
                 None if pulumi else "https://www.pulumi.com/docs/install/",
                 needed=plan is not None and not local)]
    out += extras(find_spec, cloud)
    creds = {"aws": lambda: aws_credentials(find_spec), "azure": lambda: azure_credentials(which),
             "gcp": lambda: gcp_credentials(environ)}
    for c, get in creds.items():
        got = get()
        out.append(Check(got.topic, got.ok, got.detail, got.fix, needed=cloud == c))
    if plan is not None:
        out.append(quota(plan, aws_client))
        if own:
            from reclaunch.providers.kubernetes.connect import operator_check
            out.append(operator_check(plan, Check))
        if not local:
            from reclaunch.providers.kubecloud import _prerequisites

            out += [Check("needs a person", None, line) for line in _prerequisites(plan)]
    return out


def exit_code(checks: list[Check]) -> int:
    """1 when something the spec needs is missing; "cannot tell" is not a failure. Without a
    spec nothing is needed: the report is information."""
    return 1 if any(c.ok is False and c.needed for c in checks) else 0
