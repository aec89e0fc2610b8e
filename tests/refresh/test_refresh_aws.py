"""AWS: botocore Stubber for the Price List API (moto has none), moto for spot price history."""

import datetime as dt
import json

import boto3
import pytest
from botocore.stub import ANY, Stubber
from moto import mock_aws

from reclaunch.catalog import bundled_catalog, load_catalog, offers
from reclaunch.catalog.refresh import refresh
from reclaunch.providers.aws import pricing as aws

TODAY = dt.date(2026, 11, 29)
NOW = dt.datetime(2026, 11, 29, 12, tzinfo=dt.timezone.utc)


def price_item(itype, region, usd):
    """One PriceList entry, shaped like the live API's (a JSON string)."""
    return json.dumps({
        "product": {"productFamily": "Compute instance", "sku": "SKU" + itype,
                    "attributes": {"instanceType": itype, "regionCode": region,
                                   "operatingSystem": "Linux", "tenancy": "Shared",
                                   "preInstalledSw": "NA", "capacitystatus": "Used"}},
        "serviceCode": "AmazonEC2",
        "terms": {"OnDemand": {"SKU.JRTCKXETXF": {
            "offerTermCode": "JRTCKXETXF", "effectiveDate": "2026-11-01T00:00:00Z",
            "priceDimensions": {"SKU.JRTCKXETXF.6YS6EN2CT7": {
                "unit": "Hrs", "description": f"${usd} per On Demand Linux {itype} Instance Hour",
                "pricePerUnit": {"USD": f"{usd:.10f}"}}}}}},
        "version": "20261101", "publicationDate": "2026-11-01T00:00:00Z"})


def expect(itype, region, token=None):
    params = {"ServiceCode": "AmazonEC2", "Filters": aws._filters(itype, region)}
    if token:
        params["NextToken"] = token
    return params


@pytest.fixture
def pricing(aws_env):
    client = boto3.client("pricing", region_name="us-east-1")
    with Stubber(client) as stub:
        yield client, stub


def test_on_demand_paginated_and_spot_from_moto(pricing):
    client, stub = pricing
    # p5: an empty first page with a NextToken, the product on page two
    stub.add_response("get_products", {"PriceList": [], "NextToken": "t1"},
                      expect("p5.48xlarge", "us-east-1"))
    stub.add_response("get_products", {"PriceList": [price_item("p5.48xlarge", "us-east-1", 55.04)]},
                      expect("p5.48xlarge", "us-east-1", "t1"))
    # p5e: Capacity Blocks only, no on-demand list price
    stub.add_response("get_products", {"PriceList": []}, expect("p5e.48xlarge", "us-east-2"))
    # the two rows the stubs answer for (the catalog lists p5/p5e in many more regions)
    rows = [o for o in offers(bundled_catalog(), cloud="aws")
            if (o.instance_type, o.region) in (("p5.48xlarge", "us-east-1"), ("p5e.48xlarge", "us-east-2"))]
    with mock_aws():
        got = aws.fetch_prices(rows, pricing_client=client, now=NOW)
    stub.assert_no_pending_responses()
    p5 = got.quotes[("aws", "p5.48xlarge", "us-east-1")]
    assert p5.on_demand_usd == 55.04
    assert p5.spot_usd == p5.spot_low_usd == p5.spot_high_usd == pytest.approx(0.00001)  # moto's constant
    assert "median of 6 AZ(s)" in p5.note
    p5e = got.quotes[("aws", "p5e.48xlarge", "us-east-2")]
    assert p5e.on_demand_usd is None and p5e.spot_usd is not None


def test_spot_median_and_range_use_each_az_latest(aws_env):
    ec2 = boto3.client("ec2", region_name="us-east-1")
    hist = [("us-east-1a", "17.63", NOW), ("us-east-1a", "30.00", NOW - dt.timedelta(days=2)),
            ("us-east-1b", "21.69", NOW - dt.timedelta(hours=1)),
            ("us-east-1c", "25.75", NOW - dt.timedelta(hours=3))]
    with Stubber(ec2) as stub:
        stub.add_response("describe_spot_price_history", {"SpotPriceHistory": [
            {"AvailabilityZone": az, "InstanceType": "p5.48xlarge", "SpotPrice": p,
             "ProductDescription": "Linux/UNIX", "Timestamp": ts} for az, p, ts in hist[:2]],
            "NextToken": "n"},
            {"InstanceTypes": ["p5.48xlarge"], "ProductDescriptions": aws.SPOT_PRODUCTS,
             "StartTime": ANY, "EndTime": NOW})
        stub.add_response("describe_spot_price_history", {"SpotPriceHistory": [
            {"AvailabilityZone": az, "InstanceType": "p5.48xlarge", "SpotPrice": p,
             "ProductDescription": "Linux/UNIX", "Timestamp": ts} for az, p, ts in hist[2:]]},
            {"InstanceTypes": ["p5.48xlarge"], "ProductDescriptions": aws.SPOT_PRODUCTS,
             "StartTime": ANY, "EndTime": NOW, "NextToken": "n"})
        got = aws.spot_quotes(ec2, ["p5.48xlarge"], NOW)
    assert got == {"p5.48xlarge": (21.69, 17.63, 25.75, 3)}


def test_throttled_row_fails_alone_and_refresh_writes_overlay(pricing, home):
    client, stub = pricing
    stub.add_client_error("get_products", "ThrottlingException", "Rate exceeded",
                          expected_params=expect("p4d.24xlarge", "us-east-1"))
    stub.add_response("get_products", {"PriceList": [price_item("p4de.24xlarge", "us-east-1", 27.4471)]},
                      expect("p4de.24xlarge", "us-east-1"))
    with mock_aws():
        rep = refresh(load_catalog(), clouds=["aws"], region="us-east-1", instance=None,
                      dry_run=False, today=TODAY,
                      fetchers={"aws": lambda rows: aws.fetch_prices(
                          [r for r in rows if r.instance_type.startswith("p4")],
                          pricing_client=client, now=NOW)})
    failed = {f.key: f.message for f in rep.failures}
    assert "ThrottlingException" in failed[("aws", "p4d.24xlarge", "us-east-1")]
    # rows the fetcher was not asked about come back as "no price returned", old rows kept
    assert failed[("aws", "p5.48xlarge", "us-east-1")] == "no price returned"
    cat = {o.key: o for o in load_catalog().offers}
    new = cat[("aws", "p4de.24xlarge", "us-east-1")]
    assert (new.on_demand_usd, new.price_as_of, new.origin) == (27.4471, TODAY, "overlay")
    assert new.source.startswith("AWS Price List API + EC2 spot price history 2026-11-29")
    assert cat[("aws", "p4d.24xlarge", "us-east-1")].origin == "bundled"
    assert rep.written == home / "catalog" / "instances.csv"


def test_missing_credentials_is_one_clear_line(monkeypatch, tmp_path, home):
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
              "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    # should credentials turn up anyway, the call goes to a closed local port, never to AWS
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    from reclaunch.providers import price_fetchers
    rep = refresh(bundled_catalog(), clouds=["aws"], instance="p5.48xlarge", dry_run=True,
                  fetchers=price_fetchers())
    assert [str(f) for f in rep.failures] == [
        "aws: AWS credentials not found while reading the price list "
        "(run 'aws configure' or set AWS_PROFILE)"]
    assert rep.diffs == []


def test_parse_price_list_ignores_zero_and_reads_usd():
    assert aws.parse_price_list([price_item("x", "r", 1.5), price_item("x", "r", 0.0)]) == [1.5]


def test_aws_endpoint_url_is_honoured(pricing, monkeypatch):
    """A moto server on 127.0.0.1 answers spot history through AWS_ENDPOINT_URL alone."""
    import socket

    from moto.server import ThreadedMotoServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
        client, stub = pricing
        stub.add_response("get_products", {"PriceList": [price_item("g5.48xlarge", "us-east-1", 16.288)]},
                          expect("g5.48xlarge", "us-east-1"))
        rows = offers(bundled_catalog(), cloud="aws", instance_type="g5.48xlarge", region="us-east-1")
        got = aws.fetch_prices(rows, pricing_client=client, now=NOW)
    finally:
        server.stop()
    q = got.quotes[rows[0].key]
    assert q.on_demand_usd == 16.288 and q.spot_usd == pytest.approx(0.00001)
