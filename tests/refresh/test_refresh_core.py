"""Cloud-neutral refresh: filters, diff, dry run, partial failures, overlay, rendering."""

import datetime as dt
import io
import subprocess
import sys

import pytest

from reclaunch import host
from reclaunch.catalog import bundled_catalog, load_catalog
from reclaunch.providers import price_fetchers
from reclaunch.ui.refresh import render_report, render_text
from reclaunch.catalog.refresh import Fetch, Quote, refresh
from reclaunch.errors import ProviderError, UsageError
from reclaunch.providers.azure import pricing as az
from reclaunch.providers.gcp import pricing as gcp

TODAY = dt.date(2026, 11, 29)
A3 = ("gcp", "a3-highgpu-8g", "us-central1")


def fixed(prices, seen=None):
    """A fetcher returning given quotes: {key: Quote}; records the rows it was asked for."""
    def fetch(rows):
        if seen is not None:
            seen.extend(r.key for r in rows)
        return Fetch(quotes={k: q for k, q in prices.items() if k in {r.key for r in rows}})
    return fetch


def boom(rows):
    raise ProviderError("cannot reach AWS", hint="check the network")


def test_registry_names_every_cloud_module():
    from reclaunch.providers import KUBE_CLOUDS, cloud_spec, price_fetchers
    assert set(KUBE_CLOUDS) == {"aws", "azure", "gcp"}
    assert all(cloud_spec(c).prices.startswith(f"reclaunch.providers.{c}.") for c in KUBE_CLOUDS)
    assert set(price_fetchers().keys()) == set(KUBE_CLOUDS)


def test_filters_select_rows(home):
    seen = []
    refresh(bundled_catalog(), clouds=["gcp"], region="us-east4", dry_run=True,
            fetchers={"gcp": fixed({}, seen)})
    # every GCP row in us-east4 and nothing else (the catalog lists several types there)
    want = [o.key for o in bundled_catalog().offers if o.cloud == "gcp" and o.region == "us-east4"]
    assert sorted(seen) == sorted(want) and ("gcp", "a3-megagpu-8g", "us-east4") in want
    seen.clear()
    refresh(bundled_catalog(), instance="p5.48xlarge", dry_run=True,
            fetchers={"aws": fixed({}, seen)})
    # every region the catalog lists p5 in, and nothing else
    from reclaunch.catalog import offers

    assert seen == [o.key for o in offers(bundled_catalog(), instance_type="p5.48xlarge")]
    assert ("aws", "p5.48xlarge", "us-west-2") in seen and len(seen) > 2


def test_bad_filters_are_usage_errors(home):
    with pytest.raises(UsageError, match="unknown cloud 'oracle'"):
        refresh(bundled_catalog(), clouds=["oracle"], fetchers=price_fetchers())
    with pytest.raises(UsageError, match="no catalog rows match"):
        refresh(bundled_catalog(), clouds=["gcp"], instance="p5.48xlarge", fetchers=price_fetchers())


def test_dry_run_diff_writes_nothing_and_flags_a_halved_gcp_price(home):
    # SkyPilot v8's wrong per-GPU SKU match: a3-highgpu-8g at 43.07 instead of 88.49
    rep = refresh(bundled_catalog(), clouds="gcp", instance="a3-highgpu-8g", dry_run=True,
                  today=TODAY, fetchers={"gcp": fixed({A3: Quote(43.07, 50.61, source="t")})})
    assert not (home / "catalog").exists() and rep.written is None
    (d,) = rep.diffs
    od = d.changes[0]
    assert (od.old, od.new) == (88.49, 43.07) and od.pct == pytest.approx(-51.33, abs=0.01)
    assert d.suspicious and rep.suspicious == [d]
    text = render_text(rep)
    assert "88.49 -> 43.07" in text and "-51.3%" in text and "SUSPICIOUS" in text
    assert "dry run: 1 row(s) would be written" in text


def test_partial_failures_keep_old_rows(home):
    p5 = ("aws", "p5.48xlarge", "us-east-1")
    rep = refresh(bundled_catalog(), clouds=["aws", "gcp"], dry_run=False, today=TODAY,
                  fetchers={"aws": boom, "gcp": fixed({A3: Quote(88.50, 50.61, source="GCP")})})
    assert "aws: cannot reach AWS (check the network)" in [str(f) for f in rep.failures]
    missing = [f.key for f in rep.failures if f.key]
    assert ("gcp", "a2-highgpu-8g", "us-central1") in missing and A3 not in missing
    assert rep.exit_code == 1
    cat = {o.key: o for o in load_catalog().offers}
    assert cat[p5].origin == "bundled" and cat[p5].on_demand_usd == 55.04
    assert cat[A3].origin == "overlay" and cat[A3].on_demand_usd == 88.5
    assert cat[A3].price_as_of == TODAY and cat[A3].source == "GCP 2026-11-29"


def test_fetcher_bug_is_reported_not_raised(home):
    def broken(rows):
        raise KeyError("terms")
    rep = refresh(bundled_catalog(), clouds=["aws"], fetchers={"aws": broken})
    assert [str(f) for f in rep.failures] == ["aws: KeyError: 'terms'"]


def test_price_not_returned_keeps_old_value_and_says_so(home):
    rep = refresh(bundled_catalog(), clouds=["gcp"], instance="a3-highgpu-8g", today=TODAY,
                  fetchers={"gcp": fixed({A3: Quote(on_demand_usd=90.0, source="GCP")})})
    new = rep.diffs[0].new
    assert new.spot_usd == 50.61
    assert "not returned, kept from 2026-07-30: spot_usd" in new.source


def test_overlay_merges_with_earlier_refreshes(home):
    refresh(bundled_catalog(), clouds=["gcp"], instance="a3-highgpu-8g", dry_run=False,
            today=TODAY, fetchers={"gcp": fixed({A3: Quote(88.0, 50.0, source="GCP")})})
    key = ("gcp", "a3-megagpu-8g", "us-east4")
    refresh(load_catalog(), clouds=["gcp"], region="us-east4", dry_run=False, today=TODAY,
            fetchers={"gcp": fixed({key: Quote(93.0, 24.0, source="GCP")})})
    cat = {o.key: o for o in load_catalog().offers if o.origin == "overlay"}
    assert set(cat) == {A3, key}
    assert cat[A3].on_demand_usd == 88.0 and cat[key].spot_usd == 24.0


def test_render_report_with_rich(home):
    rep = refresh(bundled_catalog(), clouds=["gcp"], instance="a3-highgpu-8g", today=TODAY,
                  fetchers={"gcp": fixed({A3: Quote(88.49, 55.0, source="GCP")})})
    from rich.console import Console
    buf = io.StringIO()
    Console(file=buf, width=140, color_system=None).print(render_report(rep))
    out = buf.getvalue()
    assert "gcp/a3-highgpu-8g/us-central1" in out and "50.61 -> 55" in out and "+8.7%" in out
    assert rep.to_dict()["rows"][0]["changes"]["spot_usd"]["new"] == 55.0


def test_end_to_end_azure_and_gcp_recorded_then_load_catalog(recorded, home, monkeypatch):
    monkeypatch.setenv("RECLAUNCH_AZURE_PRICES_URL", recorded.base + "/api/retail/prices")
    monkeypatch.setenv("RECLAUNCH_GCP_BILLING_URL", recorded.base)
    rep = refresh(None, clouds=["azure", "gcp"], dry_run=False, today=host.today(),
                  fetchers={"azure": lambda r: az.fetch_prices(r, sleep=lambda s: None),
                            "gcp": lambda r: gcp.fetch_prices(r, retry=gcp.default_retry(0.01, 5))})
    # The recording answers for a few rows only: every other Azure/GCP row of the (now every
    # region) catalog fails on its own, and the answered rows are refreshed regardless.
    fails = {f.key for f in rep.failures}
    assert {("azure", "Standard_NC96ads_A100_v4", "eastus"), ("gcp", "g2-standard-96", "us-central1")} <= fails
    assert not fails & {("azure", "Standard_ND96isr_H100_v5", "northcentralus"), A3}
    assert {k[0] for k in fails} <= {"azure", "gcp"}
    cat = {o.key: o for o in load_catalog().offers}
    h100 = cat[("azure", "Standard_ND96isr_H100_v5", "northcentralus")]
    assert (h100.on_demand_usd, h100.spot_usd, h100.origin) == (98.32, 29.5, "overlay")
    assert h100.price_as_of == host.today() and not h100.is_stale()
    assert cat[A3].on_demand_usd == pytest.approx(88.49, abs=0.01)
    assert cat[A3].spot_usd == pytest.approx(50.61, abs=0.01)
    assert load_catalog().version.endswith("+overlay")


def test_import_pulls_in_no_cloud_sdk():
    code = ("import sys, reclaunch.catalog.refresh; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('boto3', 'botocore', 'google', 'rich')]; "
            "print(bad); assert not bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_refresh_that_fetched_nothing_exits_1(home):
    rep = refresh(bundled_catalog(), clouds=["gcp"], instance="a3-highgpu-8g", dry_run=False,
                  today=TODAY, fetchers={"gcp": fixed({})})
    assert rep.diffs == [] and rep.exit_code == 1 and rep.written is None


def test_an_absurd_fetched_price_is_never_written(home):
    """A fetched 1e-05 USD/h spot (moto's placeholder once) made the overlay reader refuse the
    whole row, so a good on-demand price was lost: the absurd figure is dropped, the old one
    kept and named, and the row is read back as the overlay's."""
    old = {o.key: o for o in bundled_catalog().offers}[A3]
    rep = refresh(bundled_catalog(), clouds=["gcp"], instance="a3-highgpu-8g", region="us-central1",
                  dry_run=False, today=TODAY, fetchers={"gcp": fixed({A3: Quote(90.0, 1e-05, source="GCP")})})
    assert not rep.failures
    row = {o.key: o for o in load_catalog().offers}[A3]
    assert (row.on_demand_usd, row.spot_usd, row.origin) == (90.0, old.spot_usd, "overlay")
    assert "outside 0.01..5000 USD/h, not used: spot_usd 1e-05" in row.source
