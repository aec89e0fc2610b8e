"""GCP prices for `catalog refresh`: the Cloud Billing Catalog API (google-cloud-billing).

GCP does not price an a2/a3 machine as a whole. A machine costs
    vCPU SKU x vCPUs + RAM SKU x GiB + GPU SKU x GPUs (+ the local SSD it bundles)
and the spot price is the same sum over the "Spot Preemptible" SKUs. vCPU/GiB/GPU/SSD counts
come from the catalog row; only unit prices come from the API.

Known pitfall: the SKU list holds several GPU SKUs whose descriptions differ by one word
("Nvidia H100 80GB GPU", "... Mega GPU", commitment and reservation variants, spot variants).
A loose substring match picks the wrong one: SkyPilot's v8 catalog prices a3-highgpu-8g in
us-central1 at 43.07 instead of 88.49 and a2-ultragpu-8g at 23.57 instead of 40.55. The guards:
  1. SKU names are matched exactly (after stripping "running in <place>" and the spot words),
     only for usage types OnDemand / Preemptible;
  2. two different prices for one (SKU name, region, spot) fail the row instead of guessing;
  3. refresh flags any row that moves more than 40% against its previous price.
The A3 Mega / A3 Ultra names below are not yet checked against a live listing; if they are
wrong those rows fail with "no SKU named ..." and keep their old prices (never a wrong one).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Iterable

from reclaunch.catalog import Offer
from reclaunch.catalog.refresh import Fetch, Quote
from reclaunch.errors import ProviderError, ReclaunchError, require

COMPUTE_SERVICE = "services/6F81-5844-456A"   # Compute Engine
SOURCE = "GCP Cloud Billing Catalog API"
HOURS_PER_MONTH = 730.0                        # GCP's own conversion for per-month SKUs
LOCAL_SSD = "SSD backed Local Storage"
_PER_HOUR = {"h": 1.0, "GiBy.h": 1.0, "GiBy.mo": 1.0 / HOURS_PER_MONTH}


@dataclass(frozen=True)
class Family:
    cpu: str          # exact SKU names (see `sku_name`)
    ram: str
    gpu: str
    local_ssd: bool   # the machine type bundles its local SSD (catalog column local_nvme_gb)


# machine family (instance type without its "-8g" / "-96" size) -> SKU names
FAMILIES: dict[str, Family] = {
    "a2-highgpu": Family("A2 Instance Core", "A2 Instance Ram", "Nvidia Tesla A100 GPU", False),
    "a2-ultragpu": Family("A2 Instance Core", "A2 Instance Ram", "Nvidia Tesla A100 80GB GPU", True),
    "a3-highgpu": Family("A3 Instance Core", "A3 Instance Ram", "Nvidia H100 80GB GPU", True),
    "a3-megagpu": Family("A3 Instance Core", "A3 Instance Ram", "Nvidia H100 80GB Mega GPU", True),
    "a3-ultragpu": Family("A3 Ultra Instance Core", "A3 Ultra Instance Ram", "Nvidia H200 141GB GPU", True),
    "g2-standard": Family("G2 Instance Core", "G2 Instance Ram", "Nvidia L4 GPU", False),
}

_SPOT_WORDS = re.compile(r"^(?:Spot Preemptible |Preemptible )|"
                         r" attached to (?:Spot )?Preemptible VMs| \(Spot\)")


def family_of(instance_type: str) -> str:
    return instance_type.rsplit("-", 1)[0]


def sku_name(description: str) -> tuple[str, bool]:
    """("Nvidia H100 80GB GPU", spot?) from "Nvidia H100 80GB GPU attached to Spot Preemptible
    VMs running in Americas"."""
    spot = "Preemptible" in description
    base = description.split(" running in ")[0]
    return _SPOT_WORDS.sub("", base).strip(), spot


def unit_price(sku: Any) -> float | None:
    """USD per hour (or per GiB-hour) of the current first non-free tier."""
    if not sku.pricing_info:
        return None
    expr = sku.pricing_info[-1].pricing_expression
    factor = _PER_HOUR.get(expr.usage_unit)
    rates = [float(r.unit_price.units) + r.unit_price.nanos / 1e9 for r in expr.tiered_rates]
    paid = [r for r in rates if r > 0]
    if factor is None or not rates:
        return None
    return (paid[0] if paid else rates[0]) * factor


class PriceIndex:
    """(SKU name, region, spot) -> the distinct unit prices seen."""

    def __init__(self, skus: Iterable[Any]):
        self.prices: dict[tuple[str, str, bool], set[float]] = {}
        self.count = 0
        for sku in skus:
            self.count += 1
            if sku.category.usage_type not in ("OnDemand", "Preemptible"):
                continue   # commitments and reservations are never a list price
            price = unit_price(sku)
            if price is None:
                continue
            name, spot = sku_name(sku.description)
            spot = spot or sku.category.usage_type == "Preemptible"
            for region in sku.service_regions:
                self.prices.setdefault((name, region, spot), set()).add(round(price, 9))

    def get(self, name: str, region: str, spot: bool) -> float:
        found = self.prices.get((name, region, spot))
        kind = "spot " if spot else ""
        if not found:
            raise LookupError(f"no {kind}SKU named {name!r} in {region}")
        if len(found) > 1:
            raise LookupError(f"{len(found)} different {kind}prices for {name!r} in {region} "
                              f"({', '.join(f'{p:g}' for p in sorted(found))}): not guessing")
        return next(iter(found))


def machine_price(index: PriceIndex, row: Offer, spot: bool) -> float:
    fam = FAMILIES.get(family_of(row.instance_type))
    if fam is None:
        raise LookupError(f"no SKU table for machine family {family_of(row.instance_type)!r}")
    total = (index.get(fam.cpu, row.region, spot) * row.vcpus
             + index.get(fam.ram, row.region, spot) * row.ram_gib
             + index.get(fam.gpu, row.region, spot) * row.gpu_count)
    if fam.local_ssd and row.local_nvme_gb:
        # Local SSD is billed per GiB-month on the 375 "GB" partitions, i.e. the nominal size.
        total += index.get(LOCAL_SSD, row.region, spot) * row.local_nvme_gb
    return total


def _is_local(endpoint: str) -> bool:
    return re.match(r"^(?:https?://)?(?:127\.0\.0\.1|localhost)(?::\d+)?", endpoint) is not None


def make_client(endpoint: str | None = None) -> Any:
    billing = require("google.cloud.billing_v1", "gcp")
    endpoint = endpoint or os.environ.get("RECLAUNCH_GCP_BILLING_URL")
    kwargs: dict[str, Any] = {"transport": "rest"}
    if endpoint:
        kwargs["client_options"] = {"api_endpoint": endpoint}
        if _is_local(endpoint):   # a recorded-response server needs no credentials
            from google.auth.credentials import AnonymousCredentials
            kwargs["credentials"] = AnonymousCredentials()
    return billing.CloudCatalogClient(**kwargs)


def default_retry(initial: float = 1.0, timeout: float = 120.0) -> Any:
    from google.api_core import exceptions as gx
    from google.api_core import retry as gr

    return gr.Retry(initial=initial, maximum=30.0, multiplier=2.0, timeout=timeout,
                    predicate=gr.if_exception_type(gx.TooManyRequests, gx.ServiceUnavailable,
                                                   gx.InternalServerError, gx.BadGateway,
                                                   gx.GatewayTimeout))


def _one_line(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 200 else text[:197] + "..."


def _is_connection_error(exc: Exception) -> bool:
    try:
        import requests
    except ImportError:  # pragma: no cover - the rest transport needs requests
        return isinstance(exc, (ConnectionError, TimeoutError))
    return isinstance(exc, (requests.exceptions.ConnectionError, requests.exceptions.Timeout,
                            ConnectionError, TimeoutError))


def list_skus(client: Any, retry: Any = None, timeout: float = 60.0,
              page_size: int = 5000) -> PriceIndex:
    try:
        from google.auth import exceptions as ax
    except ImportError:  # pragma: no cover - google-auth comes with google-cloud-billing
        ax = None
    try:
        pager = client.list_skus(request={"parent": COMPUTE_SERVICE, "currency_code": "USD",
                                          "page_size": page_size},
                                 retry=retry or default_retry(), timeout=timeout)
        return PriceIndex(pager)
    except ReclaunchError:
        raise
    except Exception as exc:
        if _is_connection_error(exc):
            raise ProviderError("cannot reach the GCP Cloud Billing Catalog API",
                                hint="check the network or RECLAUNCH_GCP_BILLING_URL") from None
        if ax is not None and isinstance(exc, ax.DefaultCredentialsError):
            raise ProviderError("GCP credentials not found for the Cloud Billing Catalog API",
                                hint="run 'gcloud auth application-default login'") from None
        raise ProviderError(f"GCP billing catalog failed: {type(exc).__name__}: "
                            f"{_one_line(exc)}") from None


def fetch_prices(rows: list[Offer], *, client: Any = None, endpoint: str | None = None,
                 retry: Any = None, timeout: float = 60.0) -> Fetch:
    if client is None:
        try:
            client = make_client(endpoint)
        except ReclaunchError:
            raise
        except Exception as exc:   # e.g. DefaultCredentialsError at construction
            raise ProviderError(f"GCP billing client: {type(exc).__name__}: {_one_line(exc)}",
                                hint="run 'gcloud auth application-default login'") from None
    index = list_skus(client, retry=retry, timeout=timeout)
    if not index.count:
        raise ProviderError("GCP billing catalog returned no Compute Engine SKUs")
    result = Fetch()
    for o in rows:
        try:
            od = machine_price(index, o, spot=False)
        except LookupError as exc:
            result.failures[o.key] = str(exc).strip('"')
            continue
        notes = []
        try:
            spot = machine_price(index, o, spot=True)
        except LookupError as exc:
            spot = None
            notes.append(f"spot: {str(exc).strip(chr(34))}")
        fam = FAMILIES[family_of(o.instance_type)]
        if fam.local_ssd and o.local_nvme_gb:
            notes.append(f"incl. {o.local_nvme_gb:g} GB local SSD")
        # four decimals, as GCP's own calculator quotes machine prices (29.3871)
        result.quotes[o.key] = Quote(on_demand_usd=round(od, 4),
                                     spot_usd=None if spot is None else round(spot, 4),
                                     source=SOURCE,
                                     note="; ".join(notes))
    return result
