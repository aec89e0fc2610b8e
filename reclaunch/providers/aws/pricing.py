"""AWS prices for `catalog refresh`: Price List Query API (on-demand) + EC2 spot price history.

boto3 is imported lazily, and clients are built without endpoint_url so AWS_ENDPOINT_URL (a
moto server in tests) is honoured as botocore reads it.
"""

from __future__ import annotations

import datetime as _dt
import json
import statistics
from typing import Any, Callable

from reclaunch.catalog import Offer
from reclaunch.catalog.refresh import Fetch, Quote
from reclaunch.errors import ProviderError, require

PRICING_REGION = "us-east-1"   # the Price List Query API lives in us-east-1 (and ap-south-1)
SPOT_WINDOW = _dt.timedelta(days=7)
SPOT_PRODUCTS = ["Linux/UNIX", "Linux/UNIX (Amazon VPC)"]
SOURCE = "AWS Price List API"


def _filters(instance_type: str, region: str) -> list[dict[str, str]]:
    terms = {"instanceType": instance_type, "regionCode": region, "operatingSystem": "Linux",
             "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used"}
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in terms.items()]


def parse_price_list(price_list: list[str]) -> list[float]:
    """USD/hour of every on-demand price dimension in a get_products PriceList page."""
    out = []
    for item in price_list:
        doc = json.loads(item) if isinstance(item, str) else item
        for term in doc.get("terms", {}).get("OnDemand", {}).values():
            for dim in term.get("priceDimensions", {}).values():
                usd = dim.get("pricePerUnit", {}).get("USD")
                if usd is not None and float(usd) > 0:
                    out.append(float(usd))
    return out


def on_demand_price(pricing: Any, instance_type: str, region: str) -> float | None:
    from reclaunch.providers.aws.pages import pages   # a repeated NextToken ends, loudly

    prices: list[float] = []
    kwargs = {"ServiceCode": "AmazonEC2", "Filters": _filters(instance_type, region)}
    for page in pages(pricing.get_products, kwargs, what=f"pricing {instance_type} {region}",
                      max_pages=100):
        prices += parse_price_list(page.get("PriceList", []))
    # With all six filters there is one SKU; if AWS ever returns more, the highest is the
    # shared-tenancy list price (the others are discounted variants such as reservations).
    return max(prices) if prices else None


def spot_quotes(ec2: Any, instance_types: list[str],
                now: _dt.datetime) -> dict[str, tuple[float, float, float, int]]:
    """instance type -> (median, low, high, number of AZs) over each AZ's latest price."""
    latest: dict[tuple[str, str], tuple[_dt.datetime, float]] = {}
    pages = ec2.get_paginator("describe_spot_price_history").paginate(
        InstanceTypes=instance_types, ProductDescriptions=SPOT_PRODUCTS,
        StartTime=now - SPOT_WINDOW, EndTime=now)
    for page in pages:
        for rec in page.get("SpotPriceHistory", []):
            k = (rec["InstanceType"], rec["AvailabilityZone"])
            ts, price = rec.get("Timestamp") or _dt.datetime.min, float(rec["SpotPrice"])
            if not isinstance(ts, _dt.datetime):
                ts = _dt.datetime.min
            ts = ts.replace(tzinfo=None)
            if k not in latest or ts >= latest[k][0]:
                latest[k] = (ts, price)
    per_type: dict[str, list[float]] = {}
    for (itype, _az), (_ts, price) in latest.items():
        per_type.setdefault(itype, []).append(price)
    return {t: (statistics.median(p), min(p), max(p), len(p)) for t, p in per_type.items()}


def _provider_error(exc: Exception, what: str) -> ProviderError:
    from botocore import exceptions as bx

    if isinstance(exc, (bx.NoCredentialsError, bx.PartialCredentialsError)):
        return ProviderError(f"AWS credentials not found while reading {what}",
                             hint="run 'aws configure' or set AWS_PROFILE")
    if isinstance(exc, bx.EndpointConnectionError):
        return ProviderError(f"cannot reach AWS for {what}: {exc}",
                             hint="check the network or AWS_ENDPOINT_URL")
    if isinstance(exc, bx.ClientError):
        err = exc.response.get("Error", {})
        return ProviderError(f"AWS refused {what}: {err.get('Code')}: {err.get('Message')}")
    return ProviderError(f"AWS {what} failed: {type(exc).__name__}: {exc}")


def fetch_prices(rows: list[Offer], *, pricing_client: Any = None,
                 ec2_client: Callable[[str], Any] | None = None,
                 now: _dt.datetime | None = None) -> Fetch:
    """Quotes for every row: on-demand per (type, region), spot per region over all its AZs.

    `pricing_client` / `ec2_client(region)` are for tests (Stubber, moto); by default boto3
    clients with the default credential chain.
    """
    boto3 = require("boto3", "aws")
    from botocore.exceptions import BotoCoreError, ClientError

    now = now or _dt.datetime.now(_dt.timezone.utc)
    fatal = (BotoCoreError, ClientError)
    result = Fetch()
    if pricing_client is None:   # AWS_ENDPOINT_URL=not-a-url: one line, not a ValueError
        from reclaunch.providers.aws.pages import check_endpoint_env
        check_endpoint_env()
    # A fresh session per refresh: credentials are resolved now, not cached from earlier calls.
    session = boto3.session.Session()
    try:
        pricing = pricing_client or session.client("pricing", region_name=PRICING_REGION)
    except fatal as exc:
        raise _provider_error(exc, "the price list") from None
    make_ec2 = ec2_client or (lambda region: session.client("ec2", region_name=region))

    on_demand: dict[tuple[str, str], float | None] = {}
    for o in rows:
        try:
            on_demand[(o.instance_type, o.region)] = on_demand_price(pricing, o.instance_type, o.region)
        except ClientError as exc:  # e.g. a throttled or refused call: this row only
            result.failures[o.key] = str(_provider_error(exc, "the price list"))
        except BotoCoreError as exc:  # no credentials / no network: the whole cloud
            raise _provider_error(exc, "the price list") from None

    spot: dict[tuple[str, str], tuple[float, float, float, int]] = {}
    regions = sorted({o.region for o in rows})
    spot_errors: dict[str, str] = {}
    for region in regions:
        types = sorted({o.instance_type for o in rows if o.region == region})
        try:
            for t, q in spot_quotes(make_ec2(region), types, now).items():
                spot[(t, region)] = q
        except ClientError as exc:
            spot_errors[region] = str(_provider_error(exc, f"spot history in {region}"))
        except BotoCoreError as exc:
            raise _provider_error(exc, f"spot history in {region}") from None

    for o in rows:
        if o.key in result.failures:
            continue
        od = on_demand.get((o.instance_type, o.region))
        sp = spot.get((o.instance_type, o.region))
        if od is None and sp is None:
            why = spot_errors.get(o.region, "no spot offers either")
            result.failures[o.key] = f"not in the price list for {o.region} ({why})"
            continue
        notes, source = [], SOURCE
        if sp is not None:
            source += " + EC2 spot price history"
            notes.append(f"spot: median of {sp[3]} AZ(s), range {sp[1]:g}-{sp[2]:g}")
        elif o.region in spot_errors:
            notes.append(spot_errors[o.region])
        if od is None:
            notes.append("no on-demand list price")
        result.quotes[o.key] = Quote(
            on_demand_usd=od,
            spot_usd=sp[0] if sp else None, spot_low_usd=sp[1] if sp else None,
            spot_high_usd=sp[2] if sp else None, source=source, note="; ".join(notes))
    return result
