"""Asks Azure at `up` whether the node pools can have encryption at host (issue 24).

Two calls through azure-mgmt-compute, whose client also sends the one Features request:
  - Resource SKUs, `resource_skus.list(filter="location eq '<region>'")`
    (learn.microsoft.com/rest/api/compute/resource-skus/list): a VM size supports it when
    its capabilities hold `EncryptionAtHostSupported: True`;
  - Features, GET .../providers/Microsoft.Features/providers/Microsoft.Compute/features/
    EncryptionAtHost (learn.microsoft.com/rest/api/resources/features/get): its
    `properties.state` must be `Registered` (learn.microsoft.com/azure/aks/
    enable-host-encryption).
Either call failing (no permission, offline) leaves that half unknown; the pure rules in
stacks/azure/host_encryption.py decide what follows and what "needs a person" says. The
answer is asked once per region and subscription per process: the "needs a person" list and
the stack config read the same answer.
"""

from __future__ import annotations

import logging
import subprocess
from typing import TYPE_CHECKING, Any

from reclaunch.errors import ProviderError, ReclaunchError, require

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan
    from stacks.azure.host_encryption import Probe

log = logging.getLogger("reclaunch.azure")
FEATURE_PATH = ("/subscriptions/{sub}/providers/Microsoft.Features/providers/"
                "Microsoft.Compute/features/EncryptionAtHost")
FEATURES_API = "2021-07-01"
_ANSWERS: dict[tuple[str, str], "Probe"] = {}


def subscription(run: Any = None) -> str | None:
    from reclaunch.providers.azure.account import env_subscription

    sub = env_subscription()
    if sub:
        return sub
    try:   # the subscription `az` (and so the stack) uses
        out = (run or subprocess.run)(["az", "account", "show", "--query", "id", "-o", "tsv"],
                                      capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return (getattr(out, "stdout", "") or "").strip() or None


def make_client(sub: str, **kwargs: Any) -> Any:
    """ComputeManagementClient with short timeouts; tests pass base_url, credential, policy."""
    mgmt = require("azure.mgmt.compute", "azure")
    from reclaunch.runtime.sweep import sdk_limits

    credential = kwargs.pop("credential", None)
    if credential is None:
        identity = require("azure.identity", "azure")
        logging.getLogger("azure.identity").setLevel(logging.ERROR)
        credential = identity.DefaultAzureCredential()
    connect, read, attempts = sdk_limits()
    opts = {"connection_timeout": connect, "read_timeout": read,
            "retry_total": attempts - 1, **kwargs}
    return mgmt.ComputeManagementClient(credential, sub, **opts)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__


def supported_sizes(client: Any, region: str) -> frozenset[str]:
    out = set()
    for sku in client.resource_skus.list(filter=f"location eq '{region}'"):
        if (sku.resource_type or "").lower() != "virtualmachines":
            continue
        caps = {c.name: str(c.value) for c in sku.capabilities or []}
        if caps.get("EncryptionAtHostSupported", "").lower() == "true":
            out.add(sku.name)
    return frozenset(out)


def registered(client: Any, sub: str) -> bool:
    from azure.core.rest import HttpRequest

    resp = client.send_request(HttpRequest("GET", FEATURE_PATH.format(sub=sub),
                                           params={"api-version": FEATURES_API}))
    resp.raise_for_status()
    return ((resp.json().get("properties") or {}).get("state") or "") == "Registered"


def probe(plan: "Plan", *, client: Any = None, sub: str | None = None) -> "Probe":
    from stacks.azure.host_encryption import Probe

    sub = sub or subscription()
    if not sub:
        return Probe(None, None, "no subscription: set AZURE_SUBSCRIPTION_ID or `az login`")
    key = (plan.region or "", sub)
    if client is None and key in _ANSWERS:
        return _ANSWERS[key]
    errors: list[str] = []
    try:
        client = client or make_client(sub)
    except ReclaunchError as exc:      # the azure extra is missing
        return Probe(None, None, exc.message)
    sizes: frozenset[str] | None = None
    state: bool | None = None
    try:
        sizes = supported_sizes(client, plan.region or "")
    except Exception as exc:  # noqa: BLE001 - any SDK failure: that half stays unknown
        errors.append(f"Resource SKUs: {_first_line(exc)}")
    try:
        state = registered(client, sub)
    except Exception as exc:  # noqa: BLE001
        errors.append(f"Features: {_first_line(exc)}")
    answer = Probe(sizes, state, "; ".join(errors))
    if errors:
        log.warning("could not ask Azure about encryption at host (%s)", answer.error)
    _ANSWERS[key] = answer
    return answer


def checked(plan: "Plan", **kw: Any) -> "Probe":
    """probe(), stopping `up` before anything is created when a required setting cannot hold."""
    from stacks.azure.host_encryption import refusal

    answer = probe(plan, **kw)
    why = refusal(plan, answer)
    if why:
        raise ProviderError(why, hint="or set `security.encryption_at_host: false` (or remove "
                                      "it: then on wherever possible)")
    return answer


def stack_config(plan: "Plan") -> dict[str, str]:
    from stacks.azure.host_encryption import config

    if plan.spec.security.encryption_at_host is False:
        return {}       # the program's default is already off everywhere
    return config(plan, checked(plan))


def prerequisites(plan: "Plan") -> list[str]:
    """The "needs a person" list `up` prints, with Azure's own answer about host encryption."""
    from stacks.azure.prerequisites import manual_prerequisites

    if plan.spec.security.encryption_at_host is False:
        return manual_prerequisites(plan)
    return manual_prerequisites(plan, host=checked(plan))
