from __future__ import annotations

import datetime as dt
import re
from dataclasses import replace

from reclaunch.catalog import Catalog, bundled_catalog, load_catalog, offers, write_rows
from tests.conftest import SHARED

REFERENCE_INSTANCES = ["p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge",
                       "g5.12xlarge", "g5.48xlarge", "g6e.12xlarge", "g6e.48xlarge", "Standard_ND96asr_v4",
                       "Standard_ND96amsr_A100_v4", "Standard_ND96isr_H100_v5", "Standard_NC96ads_A100_v4",
                       "a2-highgpu-8g", "a2-ultragpu-8g", "a3-highgpu-8g", "a3-megagpu-8g",
                       "a3-ultragpu-8g", "g2-standard-96"]


def test_every_reference_instance_is_in_the_catalog() -> None:
    cat = bundled_catalog()
    assert set(REFERENCE_INSTANCES) <= set(cat.instance_types())
    if (SHARED / "reference" / "instances.md").is_file():
        text = (SHARED / "reference" / "instances.md").read_text()
        named = set(re.findall(r"^\| (?:aws|azure|gcp) \| (\S+) \|", text, re.M))
        assert named <= set(cat.instance_types())


def test_rows_are_dated_sourced_and_consistent() -> None:
    cat = bundled_catalog()
    for o in cat.offers:
        assert o.source and o.price_as_of <= dt.date(2026, 11, 30)
        assert o.gpu in cat.gpus, o.gpu
        assert o.gpu_memory_gib == cat.gpus[o.gpu].memory_gib
        if o.spot_low_usd is not None:
            assert o.spot_low_usd <= o.spot_usd <= o.spot_high_usd
        if o.spot_usd is not None and o.on_demand_usd is not None:
            assert o.spot_usd < o.on_demand_usd


def test_reference_prices_carried() -> None:
    cat = bundled_catalog()
    price = {o.key: o.on_demand_usd for o in cat.offers}
    assert price[("aws", "p5.48xlarge", "us-east-1")] == 55.04
    assert price[("gcp", "a3-highgpu-8g", "us-central1")] == 88.49  # not SkyPilot v8's 43.07
    assert price[("azure", "Standard_ND96isr_H100_v5", "eastus")] == 98.32


def test_extra_region_per_cloud() -> None:
    cat = bundled_catalog()
    listed = {"us-east-1", "us-east-2", "eastus", "us-central1"}
    for cloud in ("aws", "azure", "gcp"):
        assert set(cat.regions(cloud)) - listed, cloud


def test_offers_filters() -> None:
    cat = bundled_catalog()
    assert {o.cloud for o in offers(cat, cloud="gcp")} == {"gcp"}
    assert all(o.gpu == "H100-80GB" for o in offers(cat, gpu="h100-80gb"))
    assert all(o.spot_usd is not None for o in offers(cat, spot=True))
    assert all(o.region == "eastus" for o in offers(cat, region="eastus"))


def test_stale_flag() -> None:
    cat = bundled_catalog()
    o = cat.offers[0]
    assert replace(o, price_as_of=dt.date(2026, 1, 1)).is_stale(dt.date(2026, 11, 29))
    assert not replace(o, price_as_of=dt.date(2026, 11, 1)).is_stale(dt.date(2026, 11, 29))


def test_overlay_replaces_rows(tmp_path) -> None:
    cat = bundled_catalog()
    row = replace(offers(cat, instance_type="p5.48xlarge", region="us-east-1")[0],
                  on_demand_usd=50.0, price_as_of=dt.date(2026, 11, 29), origin="overlay")
    write_rows(tmp_path / "instances.csv", [row])
    merged = load_catalog(overlay_dir=tmp_path)
    got = offers(merged, instance_type="p5.48xlarge", region="us-east-1")[0]
    assert got.on_demand_usd == 50.0 and got.origin == "overlay"
    assert len(merged.offers) == len(cat.offers)
    (tmp_path / "instances.csv").write_text("garbage,,\n1,2\n")
    assert load_catalog(overlay_dir=tmp_path).offers == cat.offers
    assert isinstance(merged, Catalog)
