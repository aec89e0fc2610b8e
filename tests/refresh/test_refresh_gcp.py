"""GCP: Cloud Billing Catalog responses recorded on 127.0.0.1, composed into machine prices."""

import datetime as dt

import pytest

from reclaunch.catalog import bundled_catalog, offers
from reclaunch.providers.gcp.catalog_rows import is_availability_only
from reclaunch.catalog.refresh import refresh
from reclaunch.errors import ProviderError
from reclaunch.providers.gcp import pricing as gcp

TODAY = dt.date(2026, 11, 29)
# prices.md, dated 2026-07-30 (a3-megagpu us-central1 / a3-ultragpu: skypilot v8, 2026)
EXPECTED = {
    ("a2-highgpu-8g", "us-central1"): (29.3871, 15.4242),
    ("a2-ultragpu-8g", "us-central1"): (40.55, 22.08),
    ("a3-highgpu-8g", "us-central1"): (88.49, 50.61),
    ("a3-megagpu-8g", "us-central1"): (92.21, 28.17),
    ("a3-megagpu-8g", "us-east4"): (92.94, 23.28),
    ("a3-ultragpu-8g", "us-central1"): (86.76, 40.99),
}


def fast_retry():
    return gcp.default_retry(initial=0.01, timeout=5)


def fetcher(recorded, **kw):
    client = gcp.make_client(recorded.base)
    return lambda rows: gcp.fetch_prices(rows, client=client, retry=fast_retry(), **kw)


def rows():
    # The recording holds the SKUs of the rows the catalog priced by hand (EXPECTED) and no G2
    # SKU; the catalog's other GCP rows (pricing.yml-priced or availability-only, providers/gcp/catalog_rows.py) are
    # in regions and families this recording cannot answer.
    keep = set(EXPECTED) | {("g2-standard-96", "us-central1")}
    got = [o for o in offers(bundled_catalog(), cloud="gcp") if (o.instance_type, o.region) in keep]
    assert not any(is_availability_only(o.source) for o in got)
    return got


def test_composed_prices_match_dated_figures_across_pages(recorded):
    got = gcp.fetch_prices(rows(), client=gcp.make_client(recorded.base), retry=fast_retry())
    assert recorded.requests == ["gcp/skus.first", "gcp/skus.page1", "gcp/skus.page2"]
    for (itype, region), (od, spot) in EXPECTED.items():
        q = got.quotes[("gcp", itype, region)]
        assert q.on_demand_usd == pytest.approx(od, abs=0.01), itype
        assert q.spot_usd == pytest.approx(spot, abs=0.01), itype
    # g2 has no SKUs in the recording: that row fails by name, the others are priced
    assert "G2 Instance Core" in got.failures[("gcp", "g2-standard-96", "us-central1")]


def test_env_endpoint_and_anonymous_credentials(recorded, monkeypatch, home):
    monkeypatch.setenv("RECLAUNCH_GCP_BILLING_URL", recorded.base)
    got = gcp.fetch_prices(rows()[:1], retry=fast_retry())
    assert got.quotes


def test_refresh_diff_shows_no_change_for_dated_rows(recorded, home):
    rep = refresh(bundled_catalog(), clouds=["gcp"], dry_run=True, today=TODAY,
                  fetchers={"gcp": fetcher(recorded)})
    by_key = {d.key: d for d in rep.diffs}
    d = by_key[("gcp", "a3-highgpu-8g", "us-central1")]
    assert d.new.on_demand_usd == pytest.approx(88.49, abs=0.01)
    assert not d.suspicious and not d.changed   # the recording reproduces the dated prices
    assert d.new.source.startswith("GCP Cloud Billing Catalog API 2026-11-29")
    assert "6000 GB local SSD" in d.new.source
    recorded = {o.key for o in rows()}
    assert [f.key for f in rep.failures if f.key in recorded] == [("gcp", "g2-standard-96", "us-central1")]
    assert not (home / "catalog" / "instances.csv").exists()


def test_commitment_and_other_region_decoys_are_not_matched(recorded):
    idx = gcp.list_skus(gcp.make_client(recorded.base), retry=fast_retry())
    # the commitment SKU would have priced a3-highgpu-8g at SkyPilot's wrong 43.07
    assert all(3.9925 not in v for v in idx.prices.values())
    assert idx.get("Nvidia H100 80GB GPU", "us-central1", False) != 12.0


def test_two_prices_for_one_sku_fail_instead_of_guessing():
    class Sku:
        def __init__(self, desc, price):
            self.description = desc
            self.service_regions = ["us-central1"]
            self.category = type("C", (), {"usage_type": "OnDemand"})()
            rate = type("R", (), {"unit_price": type("M", (), {"units": int(price), "nanos": int(round(price % 1 * 1e9))})()})()
            expr = type("E", (), {"usage_unit": "h", "tiered_rates": [rate]})()
            self.pricing_info = [type("P", (), {"pricing_expression": expr})()]

    idx = gcp.PriceIndex([Sku("Nvidia H100 80GB GPU running in Americas", 9.8),
                          Sku("Nvidia H100 80GB GPU running in Iowa", 4.9)])
    with pytest.raises(LookupError, match="not guessing"):
        idx.get("Nvidia H100 80GB GPU", "us-central1", False)


def test_sku_name_normalisation():
    assert gcp.sku_name("Nvidia H100 80GB GPU attached to Spot Preemptible VMs running in Americas") == ("Nvidia H100 80GB GPU", True)
    assert gcp.sku_name("Spot Preemptible A3 Instance Core running in Americas") == ("A3 Instance Core", True)
    assert gcp.sku_name("Nvidia H100 80GB Mega GPU running in Americas") == ("Nvidia H100 80GB Mega GPU", False)


def test_http_429_is_retried(recorded):
    recorded.queue("gcp/skus.page1", 429, {"error": {"code": 429, "message": "slow down"}},
                   {"Retry-After": "0"})
    got = gcp.fetch_prices(rows(), client=gcp.make_client(recorded.base), retry=fast_retry())
    assert recorded.requests.count("gcp/skus.page1") == 2
    assert ("gcp", "a3-highgpu-8g", "us-central1") in got.quotes


def test_malformed_page_fails_the_cloud_and_keeps_old_rows(recorded, home):
    recorded.queue("gcp/skus.page2", 200, '{"skus": [ {"description": ')
    rep = refresh(bundled_catalog(), clouds="gcp", dry_run=False, today=TODAY,
                  fetchers={"gcp": fetcher(recorded)})
    assert rep.diffs == [] and rep.written is None
    assert len(rep.failures) == 1 and rep.failures[0].key is None
    msg = str(rep.failures[0])
    assert msg.startswith("gcp: GCP billing catalog failed") and "\n" not in msg
    assert rep.exit_code == 1


def test_empty_answer_is_a_clear_error(recorded):
    recorded.queue("gcp/skus.first", 200, {"skus": []})
    with pytest.raises(ProviderError, match="no Compute Engine SKUs"):
        gcp.fetch_prices(rows(), client=gcp.make_client(recorded.base), retry=fast_retry())


def test_unreachable_endpoint_is_one_line(home):
    client = gcp.make_client("http://127.0.0.1:9")   # discard port: connection refused
    with pytest.raises(ProviderError) as exc:
        gcp.fetch_prices(rows()[:1], client=client, retry=gcp.default_retry(0.01, 0.2), timeout=2)
    assert str(exc.value) == ("cannot reach the GCP Cloud Billing Catalog API "
                              "(check the network or RECLAUNCH_GCP_BILLING_URL)")
