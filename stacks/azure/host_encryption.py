"""Encryption at host for the AKS node pools: on by default wherever Azure allows it.

Host-based encryption (learn.microsoft.com/azure/aks/enable-host-encryption, "Host-based
encryption on Azure Kubernetes Service (AKS)") encrypts the temp disk and the OS/data disk
caches at the VM host. Its limits, from that page: it is set only when a pool is created,
only "with specific supported VM sizes" in regions that support server-side encryption of
managed disks, and the subscription feature Microsoft.Compute/EncryptionAtHost must be
Registered first (`az feature register --namespace Microsoft.Compute --name EncryptionAtHost`).
A size supports it when the Resource SKUs API lists the capability
`EncryptionAtHostSupported: True` for it in the region
(learn.microsoft.com/rest/api/compute/resource-skus/list; the VM-side page
learn.microsoft.com/azure/virtual-machines/disks-enable-host-based-encryption-cli,
"Finding supported VM sizes", queries the same capability).

`security.encryption_at_host`:
  unset (default)  on for every pool whose size supports it, when the feature is Registered;
                   otherwise off, and "what needs a person" says how to have it next time
  true             required: `up` stops before creating anything when a pool cannot have it
  false            off

Pure. `up` asks Azure (reclaunch/providers/azure/host_encryption.py) and hands the answer to
the program as the stack config `reclaunch:encryptionAtHost` (JSON {vm_size: bool}). Preview
and any run without that config show what `up` does with the feature Registered and every
size supporting it (the plan's "needs a person" list says so).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

CONFIG_KEY = "encryptionAtHost"          # reclaunch:encryptionAtHost
CAPABILITY = "EncryptionAtHostSupported"
FEATURE = "Microsoft.Compute/EncryptionAtHost"
REGISTER = ("`az feature register --namespace Microsoft.Compute --name EncryptionAtHost`, "
            "then `az provider register -n Microsoft.Compute`")


@dataclass(frozen=True)
class Probe:
    """What Azure answered at `up`. None = the call failed (`error` says why)."""

    supported: frozenset[str] | None     # VM sizes with EncryptionAtHostSupported=True here
    registered: bool | None              # the feature's state is Registered
    error: str = ""


def sizes(plan: "Plan") -> list[str]:
    from stacks.azure.pools import node_pools

    return sorted({p.instance_type for p in node_pools(plan)})


def _unsupported(plan: "Plan", probe: Probe) -> list[str]:
    return [s for s in sizes(plan) if probe.supported is not None and s not in probe.supported]


def refusal(plan: "Plan", probe: Probe) -> str | None:
    """Why `encryption_at_host: true` cannot be honoured (None: it can, or Azure did not say)."""
    if plan.spec.security.encryption_at_host is not True:
        return None
    if probe.registered is False:
        return (f"security.encryption_at_host: true, but the subscription feature {FEATURE} "
                f"is not Registered; register it: {REGISTER}")
    bad = _unsupported(plan, probe)
    if bad:
        return (f"security.encryption_at_host: true, but {', '.join(bad)} does not support "
                f"encryption at host in {plan.region} (Resource SKUs: no {CAPABILITY})")
    return None


def decide(plan: "Plan", probe: Probe | None) -> dict[str, bool]:
    """{vm_size: enable} for every pool size. probe None: preview (nothing asked)."""
    want = plan.spec.security.encryption_at_host
    all_sizes = sizes(plan)
    if want is False:
        return {s: False for s in all_sizes}
    if probe is None or want is True:   # true: refusal() has already stopped `up` if it must
        return {s: True for s in all_sizes}
    # Default: only where Azure said yes to both, since a pool asked for it without the
    # feature or on an unsupported size fails to create (after the network and the cluster).
    ok = probe.registered is True and probe.supported is not None
    return {s: ok and s in (probe.supported or ()) for s in all_sizes}


def person_lines(plan: "Plan", probe: Probe | None) -> list[str]:
    """The "what needs a person" lines about it (plan and `up --dry-run`: probe None)."""
    want = plan.spec.security.encryption_at_host
    if want is False:
        return []
    if probe is None:
        if want:
            return [f"feature EncryptionAtHost must be Registered: {REGISTER}"]
        return ["encryption at host is on by default: it needs the subscription feature "
                f"EncryptionAtHost Registered once ({REGISTER}); `up` checks, and without it "
                "creates the nodes without encryption at host (`security.encryption_at_host: "
                "true` makes it required, `false` turns it off)"]
    if probe.error:
        if want:
            return [f"could not check encryption at host with Azure ({probe.error}): the pools "
                    f"ask for it as required; Azure refuses them unless feature EncryptionAtHost "
                    f"is Registered ({REGISTER})"]
        return [f"could not check encryption at host with Azure ({probe.error}): the nodes are "
                "created without it; to have it, fix the access and rerun, or set "
                "`security.encryption_at_host: true`"]
    if want:
        return []
    if probe.registered is not True:
        return ["feature EncryptionAtHost is not Registered in this subscription, so the nodes "
                "are created WITHOUT encryption at host (it cannot be added to a pool later): "
                f"register it ({REGISTER}) before `up` to have it"]
    bad = _unsupported(plan, probe)
    return [f"{', '.join(bad)} does not support encryption at host in {plan.region}: "
            "those pools run without it"] if bad else []


def settings(plan: "Plan") -> dict[str, bool]:
    """What the program sets: `up`'s answer from the stack config, else decide(plan, None)."""
    try:
        import pulumi

        found = pulumi.Config("reclaunch").get(CONFIG_KEY)
    except Exception:  # noqa: BLE001 - outside an engine run there is no config
        found = None
    base = decide(plan, None)
    if not found:
        return base
    given = {str(k): bool(v) for k, v in json.loads(found).items()}
    # A size the answer does not name is on only when the spec requires it.
    required = plan.spec.security.encryption_at_host is True
    return {s: given.get(s, required) for s in base}


def config(plan: "Plan", probe: Probe) -> dict[str, str]:
    return {f"reclaunch:{CONFIG_KEY}": json.dumps(decide(plan, probe), sort_keys=True)}
