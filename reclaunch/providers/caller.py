"""Stack config every cloud's `up` adds: who may reach the new cluster's API.

`security.api_cidrs` empty means "only the address `up` runs from". That address is learned
here, once per `up`, and handed to the program as `reclaunch:apiCidrs` (JSON list); the
program never makes the network call itself, so previews stay offline (and private).
"""

from __future__ import annotations

import ipaddress
import json
import urllib.request
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

# AWS's echo service answers any caller with its public IPv4 address, one line.
CHECKIP_URL = "https://checkip.amazonaws.com"


def public_ip(fetch: Callable[[str], str] | None = None, timeout: float = 5.0) -> str | None:
    """This machine's public IPv4 address, or None when it cannot be learned."""
    def _get(url: str) -> str:
        with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 - fixed https URL
            return r.read(64).decode()
    try:
        text = (fetch or _get)(CHECKIP_URL).strip()
        return str(ipaddress.IPv4Address(text))
    except Exception:  # noqa: BLE001 - no address: the cluster stays private
        return None


def access_config(plan: "Plan", fetch: Callable[[str], str] | None = None) -> dict[str, str]:
    """{"reclaunch:apiCidrs": '["<ip>/32"]'} when the spec names no CIDRs, {} when it does.
    An unknown address stops `up` before anything is created: a cluster whose API this
    machine cannot reach would hang on its first Kubernetes resource."""
    from reclaunch.errors import ProviderError

    if plan.spec.security.api_cidrs:
        return {}
    ip = public_ip(fetch)
    if not ip:
        raise ProviderError(f"cannot learn this machine's public address ({CHECKIP_URL}) to "
                            "allow it to the cluster API",
                            hint="set security.api_cidrs in the spec (e.g. [203.0.113.7/32])")
    return {"reclaunch:apiCidrs": json.dumps([f"{ip}/32"])}
