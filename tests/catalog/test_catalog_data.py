"""The bundled catalog's data: every row agrees with the instance facts table, is priced (or
says how it is sold instead), dated in the past, in a region named like the cloud names them."""

from __future__ import annotations

import csv
import datetime as dt
import math
import re

import pytest
import yaml

from reclaunch.catalog import PURCHASE_KINDS, STALE_AFTER_DAYS, bundled_catalog, sources
from reclaunch.catalog.build_catalog import DATA, aggregate, build_rows, read_facts
from reclaunch.providers.azure import catalog_rows as build_azure
from reclaunch.providers.gcp import catalog_rows as build_gcp
from tests.needs import need_input


def source_rows(names) -> list[dict]:
    """The rows of the named extracts (shared/reference/catalog-sources). A user's clone without
    ../shared skips; CI (CI=true, a copy of shared/ beside the clone) must have them."""
    paths = sources.defaults(tuple(names))
    for p in paths:
        need_input(p, "re-deriving catalog rows from their source extract")
    rows: list[dict] = []
    for p in paths:
        with p.open(newline="") as fh:
            rows.extend(csv.DictReader(fh))
    return rows

FACT_FIELDS = ("gpu", "gpu_count", "gpu_memory_gib", "intra_node", "nvlink", "nvlink_gbs_per_gpu",
               "fabric", "nics", "network_gbps", "gpudirect", "vcpus", "ram_gib", "local_nvme_gb")
# How each cloud spells a region (a typo'd or invented region must not slip into the data).
REGION_NAME = {"aws": r"[a-z]{2}(-gov)?-[a-z]+-\d", "azure": r"[a-z]+[a-z0-9]*",
               "gcp": r"[a-z]+-[a-z]+\d+"}
PRICES = ("on_demand_usd", "spot_usd", "spot_low_usd", "spot_high_usd", "purchase_usd")


def _facts():
    return read_facts()


def test_every_row_agrees_with_the_instance_facts_table():
    facts = _facts()
    for o in bundled_catalog().offers:
        f = facts.get((o.cloud, o.instance_type))
        assert f is not None, f"{o.key}: not in instance_types.csv"
        for k in FACT_FIELDS:
            want = f[k]
            got = getattr(o, k)
            if isinstance(got, bool):
                assert got == (want == "true"), (o.key, k)
            elif isinstance(got, (int, float)):
                assert got == float(want or 0), (o.key, k, got, want)
            else:
                assert got == want, (o.key, k, got, want)


def test_gpu_memory_and_count_match_the_gpu_table():
    cat = bundled_catalog()
    for (cloud, it), f in _facts().items():
        assert f["gpu"] in cat.gpus, (it, f["gpu"])
        assert float(f["gpu_memory_gib"]) == cat.gpus[f["gpu"]].memory_gib
        assert int(f["gpu_count"]) >= 1 and f["purchase"] in PURCHASE_KINDS


def test_prices_positive_finite_dated_and_ordered():
    today = dt.date.today()
    for o in bundled_catalog().offers:
        for k in PRICES:
            v = getattr(o, k)
            assert v is None or (math.isfinite(v) and v > 0), (o.key, k, v)
        assert o.price_as_of <= today, (o.key, o.price_as_of)
        assert o.source.strip(), o.key
        if o.spot_low_usd is not None:
            assert o.spot_low_usd <= o.spot_usd <= o.spot_high_usd, o.key
        if o.on_demand_usd is None:
            # not sold on demand: it says how it is sold instead
            assert o.purchase != "on-demand" or o.spot_usd is None, o.key


def test_regions_are_well_formed_and_zones_belong_to_them():
    for o in bundled_catalog().offers:
        assert re.fullmatch(REGION_NAME[o.cloud], o.region), o.key
        for z in o.zones.split():
            if o.cloud == "gcp":   # GCP zones are the region plus a letter: europe-west4-b
                assert re.fullmatch(re.escape(o.region) + r"-[a-z]", z), (o.key, z)
            else:
                assert z.startswith(_az_id_prefix(o.region) + "-az") or z.startswith(o.region), (o.key, z)


_COMPASS = {"north": "n", "south": "s", "east": "e", "west": "w", "central": "c",
            "northeast": "ne", "southeast": "se", "northwest": "nw", "southwest": "sw"}


def _az_id_prefix(region: str) -> str:
    """AWS AZ IDs name their region in short: ap-northeast-1 -> apne1, eu-central-1 -> euc1."""
    area, direction, n = region.split("-")[-3:]
    return area + _COMPASS.get(direction, direction) + n


def test_fewer_than_ten_percent_of_priced_rows_stale_on_the_generation_date():
    # A source meta.yaml names as known-stale (the only dated GCP list price: pricing.yml of
    # 2026-07-30) is deliberate and every plan on it says "stale"; any other stale row counts.
    meta = yaml.safe_load((DATA / "meta.yaml").read_text())
    generated = dt.date.fromisoformat(str(meta["generated"]))
    known = tuple(meta.get("known_stale_sources") or ())
    priced = [o for o in bundled_catalog().offers if o.priced and not o.source.startswith(known)]
    stale = [o.key for o in priced if o.is_stale(generated)]
    assert len(stale) < 0.10 * len(priced), (len(stale), len(priced), stale)
    assert meta["stale_after_days"] == STALE_AFTER_DAYS


# Rows listed for their facts but with no price any source we could date gives: named here so a
# new unpriced row fails. `reclaunch catalog refresh` prices them from the vendor's API.
KNOWN_UNPRICED: set[tuple[str, str, str]] = set()


def _gcp_generated() -> list[dict]:
    """The GCP rows build_gcp makes from the extracts: availability, then pricing.yml prices."""
    facts = _facts()
    avail = build_gcp.availability(source_rows(build_gcp.SOURCES), facts)
    prices = build_gcp.read_prices(source_rows([build_gcp.PRICES]))
    with (DATA / "instances.csv").open(newline="") as fh:
        existing = list(csv.DictReader(fh))
    return build_gcp.price_rows(build_gcp.build_rows(avail, facts, existing), prices, facts)


def _gcp_availability_only() -> set[tuple[str, str, str]]:
    """GCP rows the snapshot extract lists that no dated source prices (see build_gcp)."""
    return {(r["cloud"], r["instance_type"], r["region"]) for r in _gcp_generated()
            if build_gcp.is_availability_only(r["source"])}


def test_unpriced_rows_say_so_without_the_extracts():
    # Runs in a clone without ../shared: every unpriced row says how it is sold instead, or that
    # it is an availability-only listing (never a silent blank).
    for o in bundled_catalog().offers:
        if not o.priced and o.key not in KNOWN_UNPRICED:
            assert o.purchase != "on-demand" or build_gcp.is_availability_only(o.source), o.key


def test_unpriced_rows_are_marked_not_sold_on_demand():
    # An availability-only GCP row is allowed only where the snapshot extract lists the type in
    # that region and no dated price covers it: a stray unpriced row still fails.
    allowed = KNOWN_UNPRICED | _gcp_availability_only()
    for o in bundled_catalog().offers:
        if not o.priced and o.key not in KNOWN_UNPRICED and o.cloud == "gcp":
            assert build_gcp.is_availability_only(o.source), o.key
    unpriced = [o for o in bundled_catalog().offers if not o.priced and o.key not in allowed]
    assert all(o.purchase != "on-demand" for o in unpriced), [o.key for o in unpriced]
    still = {o.key for o in bundled_catalog().offers if not o.priced}
    assert KNOWN_UNPRICED <= still, "a known-unpriced row got a price: drop it from KNOWN_UNPRICED"
    # the B200 A4 has no dated price anywhere: flagged, never silently priced
    assert ("gcp", "a4-highgpu-8g", "us-central1") in still


def test_generator_reproduces_bundled_rows_from_a_snapshot_extract(tmp_path):
    """The us-east-1 p5 row, rebuilt from its snapshot lines (catalogs/v8/aws/vms.csv@00148f2a)."""
    snap = tmp_path / "vms.csv"
    lines = ["InstanceType,Price,SpotPrice,Region,AvailabilityZone",
             "p5.48xlarge,55.04,10.239700,us-east-1,use1-atl2-az1",   # a Local Zone: left out
             "p5.48xlarge,55.04,55.040000,us-east-1,use1-az1",        # spot at on-demand: left out
             "p5.48xlarge,55.04,19.253100,us-east-1,use1-az2",
             "p5.48xlarge,55.04,21.154300,us-east-1,use1-az3",
             "p5.48xlarge,55.04,55.040000,us-east-1,use1-az4",
             "p5.48xlarge,55.04,25.752200,us-east-1,use1-az5",
             "p5.48xlarge,55.04,17.628900,us-east-1,use1-az6",
             "p5e.48xlarge,,18.735900,us-east-2,use2-az3",
             "g4dn.xlarge,0.526,0.2,us-east-1,use1-az1"]              # not a catalogued type
    snap.write_text("\n".join(lines) + "\n")
    facts = _facts()
    with snap.open() as fh:
        cells = aggregate(csv.DictReader(fh), facts, "aws")
    rows, _ = build_rows(cells, facts, "test-snapshot", dt.date(2026, 11, 9), "aws")
    got = {(r["instance_type"], r["region"]): r for r in rows}
    assert set(got) == {("p5.48xlarge", "us-east-1"), ("p5e.48xlarge", "us-east-2")}
    bundled = {o.key: o for o in bundled_catalog().offers}[("aws", "p5.48xlarge", "us-east-1")]
    p5 = got[("p5.48xlarge", "us-east-1")]
    assert float(p5["on_demand_usd"]) == bundled.on_demand_usd == 55.04
    assert (float(p5["spot_usd"]), float(p5["spot_low_usd"]), float(p5["spot_high_usd"])) == \
        (bundled.spot_usd, bundled.spot_low_usd, bundled.spot_high_usd) == (21.69, 17.63, 25.75)
    assert p5["zones"] == "use1-az1 use1-az2 use1-az3 use1-az4 use1-az5 use1-az6"
    p5e = got[("p5e.48xlarge", "us-east-2")]
    assert p5e["on_demand_usd"] == "" and p5e["purchase"] == "capacity-block"


def test_gcp_generator_lists_every_snapshot_region_and_keeps_dated_prices():
    """build_gcp reproduces the bundled GCP rows of covered types from the committed extract."""
    facts = _facts()
    avail = build_gcp.availability(source_rows(build_gcp.SOURCES), facts)
    # A3 Mega is sold in europe-west4 (zones b and c) per the snapshot and Google's GPU regions page
    assert avail[("a3-megagpu-8g", "europe-west4")] == ["europe-west4-b", "europe-west4-c"]
    bundled = {o.key: o for o in bundled_catalog().offers}
    for r in _gcp_generated():
        o = bundled[(r["cloud"], r["instance_type"], r["region"])]
        assert o.zones == r["zones"], o.key
        assert o.on_demand_usd == (float(r["on_demand_usd"]) if r["on_demand_usd"] else None), o.key
        assert o.spot_usd == (float(r["spot_usd"]) if r["spot_usd"] else None), o.key
        assert o.source == r["source"] and o.price_as_of.isoformat() == r["price_as_of"], o.key
    # a receipted whole-machine price is never replaced by the snapshot's host-only column
    assert bundled[("gcp", "a3-megagpu-8g", "us-central1")].on_demand_usd == 92.21
    # a region only the snapshot listed is priced from the dated pricing.yml, not left blank
    eu = bundled[("gcp", "a3-megagpu-8g", "europe-west4")]
    assert eu.priced and eu.price_as_of == dt.date(2026, 7, 30)
    assert eu.source.startswith(build_gcp.PRICES_NAME)


def test_azure_generator_reproduces_bundled_rows_and_its_date_is_a_receipt():
    """build_azure rebuilds every bundled Azure row it covers from the committed extract; the
    extract's eastus prices are the dated receipts that give the rows their date."""
    facts = _facts()
    snap = source_rows(build_azure.SOURCES)
    for (it, region), usd in build_azure.RECEIPTS.items():
        assert [float(r["Price"]) for r in snap if (r["InstanceType"], r["Region"]) == (it, region)] == [usd]
    rows, _ = build_azure.generate(snap, facts)
    bundled = {o.key: o for o in bundled_catalog().offers}
    assert len(rows) == 38      # 16 of the 4-/8-GPU types, 22 of the 1- and 2-GPU NC sizes
    for r in rows:
        o = bundled[(r["cloud"], r["instance_type"], r["region"])]
        assert o.on_demand_usd == float(r["on_demand_usd"]) and o.price_as_of == build_azure.AS_OF, o.key
        assert o.spot_usd == (float(r["spot_usd"]) if r["spot_usd"] else None), o.key
    # the file's H100 spot equals on-demand: no discount, so no spot price (not a 98.32 "spot")
    assert bundled[("azure", "Standard_ND96isr_H100_v5", "eastus")].spot_usd is None
    # a region the US-only file does not list is kept with its own source, not dropped
    assert ("azure", "Standard_ND96isr_H100_v5", "northcentralus") in bundled
