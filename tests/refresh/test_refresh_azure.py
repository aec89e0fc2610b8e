"""Azure: Retail Prices API pages recorded on 127.0.0.1."""

import datetime as dt

import pytest

from reclaunch.catalog import bundled_catalog, offers
from reclaunch.catalog.refresh import refresh
from reclaunch.errors import ProviderError
from reclaunch.providers.azure import pricing as az

TODAY = dt.date(2026, 11, 29)
H100 = ("azure", "Standard_ND96isr_H100_v5", "eastus")


def rows():
    return offers(bundled_catalog(), cloud="azure")


def test_pages_followed_and_windows_low_priority_dropped(recorded):
    sleeps = []
    got = az.fetch_prices(rows(), url=recorded.base + "/api/retail/prices", sleep=sleeps.append)
    assert "azure/Standard_ND96isr_H100_v5.eastus.skip1000" in recorded.requests
    q = got.quotes[H100]
    assert (q.on_demand_usd, q.spot_usd) == (98.32, 24.58)
    # the newest effectiveStartDate wins over the 2023 price
    assert got.quotes[("azure", "Standard_ND96isr_H100_v5", "northcentralus")].on_demand_usd == 98.32
    assert got.quotes[("azure", "Standard_ND96asr_v4", "eastus")].on_demand_usd == 27.197
    assert sleeps == []


def test_empty_answer_fails_only_that_row(recorded):
    got = az.fetch_prices(rows(), url=recorded.base + "/api/retail/prices", sleep=lambda s: None)
    assert "no Linux Consumption price" in got.failures[("azure", "Standard_NC96ads_A100_v4", "eastus")]
    assert len(got.quotes) == 4


def test_http_429_retried_with_retry_after(recorded, monkeypatch):
    monkeypatch.setenv("RECLAUNCH_AZURE_PRICES_URL", recorded.base + "/api/retail/prices")
    key = "azure/Standard_ND96asr_v4.eastus.skip0"
    recorded.queue(key, 429, "", {"Retry-After": "7"})
    recorded.queue(key, 503, "")
    sleeps = []
    got = az.fetch_prices(rows(), sleep=sleeps.append)
    assert sleeps == [7.0, 2.0]
    assert recorded.requests.count(key) == 3
    assert got.quotes[("azure", "Standard_ND96asr_v4", "eastus")].on_demand_usd == 27.197


def test_retries_give_up(recorded):
    key = "azure/Standard_ND96asr_v4.eastus.skip0"
    for _ in range(3):
        recorded.queue(key, 429, "", {"Retry-After": "1"})
    got = az.fetch_prices(rows(), url=recorded.base + "/api/retail/prices", retries=2,
                          sleep=lambda s: None)
    assert got.failures[("azure", "Standard_ND96asr_v4", "eastus")] == "HTTP 429 from the Azure price API"


def test_malformed_page_keeps_old_row_and_refreshes_the_rest(recorded, home):
    recorded.queue("azure/Standard_ND96isr_H100_v5.eastus.skip1000", 200, '{"Items": [{"sku')
    url = recorded.base + "/api/retail/prices"
    rep = refresh(bundled_catalog(), clouds=["azure"], dry_run=False, today=TODAY,
                  fetchers={"azure": lambda r: az.fetch_prices(r, url=url, sleep=lambda s: None)})
    failed = {f.key: f.message for f in rep.failures}
    assert "malformed page" in failed[H100]
    assert ("azure", "Standard_NC96ads_A100_v4", "eastus") in failed
    from reclaunch.catalog import load_catalog
    cat = {o.key: o for o in load_catalog().offers}
    assert cat[H100].origin == "bundled" and cat[H100].price_as_of == dt.date(2026, 11, 9)
    asr = cat[("azure", "Standard_ND96asr_v4", "eastus")]
    assert asr.origin == "overlay" and asr.price_as_of == TODAY
    assert asr.source.startswith("Azure Retail Prices API 2026-11-29")


def test_unreachable_is_a_one_line_provider_error():
    with pytest.raises(ProviderError) as exc:
        az.fetch_prices(rows()[:1], url="http://127.0.0.1:9/api/retail/prices", timeout=2,
                        sleep=lambda s: None)
    assert "cannot reach the Azure price API" in str(exc.value) and "\n" not in str(exc.value)


def test_pick_prices_filters():
    items = [
        {"skuName": "X Spot", "productName": "VM Series Windows", "retailPrice": 9},
        {"skuName": "X Low Priority", "productName": "VM Series", "retailPrice": 1},
        {"skuName": "X", "productName": "VM Series", "retailPrice": 10, "type": "DevTestConsumption"},
        {"skuName": "X", "productName": "VM Series", "retailPrice": "bad"},
    ]
    assert az.pick_prices(items, "S", "r") == (None, None)
