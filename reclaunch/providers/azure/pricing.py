"""Azure prices for `catalog refresh`: the Retail Prices REST API (public, no auth).

stdlib urllib only, so no Azure SDK is needed to refresh prices. The base URL comes from the
argument, then RECLAUNCH_AZURE_PRICES_URL (tests point it at 127.0.0.1), then the public API.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable

from reclaunch.catalog import Offer
from reclaunch.catalog.refresh import Fetch, Quote
from reclaunch.errors import ProviderError

DEFAULT_URL = "https://prices.azure.com/api/retail/prices"
SOURCE = "Azure Retail Prices API"
RETRY_STATUS = {429, 500, 502, 503, 504}
MAX_PAGES = 50          # a filter on one SKU and region returns one or two pages
MAX_RETRY_AFTER = 60.0  # seconds; never trust a header to park us for an hour


class PageError(Exception):
    """One SKU's answer was unusable (malformed page, HTTP 4xx): that row fails, others go on."""


def base_url(url: str | None = None) -> str:
    return url or os.environ.get("RECLAUNCH_AZURE_PRICES_URL") or DEFAULT_URL


def _filter(sku: str, region: str) -> str:
    return (f"serviceName eq 'Virtual Machines' and priceType eq 'Consumption' "
            f"and armRegionName eq '{region}' and armSkuName eq '{sku}'")


def _retry_after(headers: Any, attempt: int) -> float:
    try:
        return min(float(headers.get("Retry-After")), MAX_RETRY_AFTER)
    except (TypeError, ValueError):
        return min(2.0 ** attempt, MAX_RETRY_AFTER)


def get_json(url: str, *, timeout: float, retries: int, sleep: Callable[[float], None]) -> dict:
    for attempt in range(retries + 1):
        try:
            req = urllib.request.Request(url, headers={"Accept": "application/json",
                                                       "User-Agent": "reclaunch-catalog-refresh"})
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                body = resp.read()
        except urllib.error.HTTPError as exc:
            if exc.code in RETRY_STATUS and attempt < retries:
                sleep(_retry_after(exc.headers, attempt))
                continue
            raise PageError(f"HTTP {exc.code} from the Azure price API") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ProviderError(f"cannot reach the Azure price API at "
                                f"{urllib.parse.urlsplit(url).netloc}: {reason}",
                                hint="check the network or RECLAUNCH_AZURE_PRICES_URL") from None
        try:
            doc = json.loads(body)
        except ValueError:
            raise PageError("malformed page from the Azure price API (not JSON)") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("Items"), list):
            raise PageError("malformed page from the Azure price API (no Items list)")
        return doc
    raise AssertionError("unreachable")


def retail_items(sku: str, region: str, *, url: str | None = None, timeout: float = 30.0,
                 retries: int = 4, sleep: Callable[[float], None] = time.sleep) -> list[dict]:
    """Every Consumption price row for one VM size in one region, following NextPageLink."""
    query = urllib.parse.urlencode({"$filter": _filter(sku, region)}, quote_via=urllib.parse.quote)
    next_url: str | None = f"{base_url(url)}?{query}"
    items: list[dict] = []
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        seen.add(next_url)
        doc = get_json(next_url, timeout=timeout, retries=retries, sleep=sleep)
        items += [i for i in doc["Items"] if isinstance(i, dict)]
        next_url = doc.get("NextPageLink")
        if not next_url:
            return items
        if next_url in seen:
            raise PageError(f"NextPageLink loops for {sku} in {region}")
    raise PageError(f"more than {MAX_PAGES} pages for {sku} in {region}")


def pick_prices(items: list[dict], sku: str, region: str) -> tuple[float | None, float | None]:
    """(on-demand, spot) USD/hour for Linux, from Retail Prices rows."""
    best: dict[str, tuple[str, float]] = {}   # kind -> (effectiveStartDate, price)
    for it in items:
        name, product = str(it.get("skuName", "")), str(it.get("productName", ""))
        if (it.get("armSkuName") not in (None, sku) or it.get("armRegionName") not in (None, region)
                or it.get("type", "Consumption") != "Consumption"
                or "Low Priority" in name or "Windows" in product
                or it.get("unitOfMeasure", "1 Hour") != "1 Hour"):
            continue
        try:
            price = float(it.get("retailPrice", it.get("unitPrice")))
        except (TypeError, ValueError):
            continue
        kind = "spot" if " Spot" in name else "on_demand"
        when = str(it.get("effectiveStartDate", ""))
        if kind not in best or when > best[kind][0]:   # the newest price wins
            best[kind] = (when, price)
    return (best["on_demand"][1] if "on_demand" in best else None,
            best["spot"][1] if "spot" in best else None)


def fetch_prices(rows: list[Offer], *, url: str | None = None, timeout: float = 30.0,
                 retries: int = 4, sleep: Callable[[float], None] = time.sleep) -> Fetch:
    result = Fetch()
    for o in rows:
        try:
            items = retail_items(o.instance_type, o.region, url=url, timeout=timeout,
                                 retries=retries, sleep=sleep)
        except PageError as exc:
            result.failures[o.key] = str(exc)
            continue
        od, spot = pick_prices(items, o.instance_type, o.region)
        if od is None and spot is None:
            result.failures[o.key] = (f"no Linux Consumption price for {o.instance_type} "
                                      f"in {o.region} ({len(items)} rows returned)")
            continue
        notes = [] if spot is not None else ["no spot row"]
        result.quotes[o.key] = Quote(on_demand_usd=od, spot_usd=spot, source=SOURCE,
                                     note="; ".join(notes))
    return result
