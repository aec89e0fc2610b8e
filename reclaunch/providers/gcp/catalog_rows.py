"""Regenerate the bundled catalog's GCP region list from a SkyPilot GCP catalog snapshot. Not on
any start-up path: run by hand when a newer snapshot is read, then review the diff and commit.

    python -m reclaunch.providers.gcp.catalog_rows [--gcp FILE ...] [--prices FILE] [--write]

Input: SkyPilot's `catalogs/v8/gcp/vms.csv` (github.com/skypilot-org/skypilot-catalog), or
extracts of it. The defaults live in ../shared/reference/catalog-sources/ (SOURCES below; they
are another project's files, not package data): skypilot_v8_gcp_006059e0.csv (the 8-GPU A2/A3
rows, verbatim) and skypilot_v8_gcp_006059e0_sizes.csv (the InstanceType, Region and
AvailabilityZone columns of the a2-highgpu/a2-ultragpu/a3-highgpu 1g/2g/4g, a4-highgpu-8g and
g2-standard-* rows) of the copy read at commit 006059e0f18acb1341e22a27751e9f80df6ba92f.

Prices (--prices, default PRICES below): the hour / hour_spot of every catalogued machine
type and region in Cyclenerd/google-cloud-pricing-cost-calculator@fd66b26f pricing.yml, whose
`about.generated` is Thu Jul 30 2026: a whole-machine price built from the Cloud Billing Catalog
SKUs (vCPU + RAM + GPU + bundled local SSD: its a3-highgpu-8g us-central1 88.49 / 50.61 and
a2-highgpu-8g 29.3871 / 15.4242 are the bundled receipts). A row of a region the snapshot lists
and pricing.yml prices is priced from it, dated 2026-07-30; a row without a dated price of its
own that pricing.yml does not price (a3-ultragpu-8g, a4-highgpu-8g) stays availability-only.
Machine types sold only as Spot or Flex-start (purchase flex-start in instance_types.csv) take
the spot price only.

What it takes from the snapshot: WHERE each instance type is sold (region + zones), nothing else.
Its prices are not used, for two reasons:
  * for A2/A3 machine types the file's Price is the host only (vCPU + RAM SKUs): the GPUs are
    billed by a separate per-GPU SKU, listed in other rows. a3-highgpu-8g and a3-megagpu-8g have
    the same 9.46006 USD/h in us-central1 there, while the bundled, receipted whole-machine price
    is 88.49 / 92.21. Using the column as-is is the per-GPU SKU pitfall in
    shared/reference/prices.md.
  * the file carries no date, and no dated receipt of its numbers exists to date it by (the AWS
    rows were dated that way; see providers/aws/catalog_rows.py).
So a region this snapshot adds is written without a price ("availability only") unless the
dated pricing.yml extract prices it, and `reclaunch catalog refresh` (Cloud Billing Catalog:
host + GPU + bundled SSD SKUs, providers/gcp/pricing.py) prices it live. A row already bundled
with its own dated price is kept as it is; only its zones are filled in from the snapshot.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reclaunch.catalog import sources
from reclaunch.catalog.build_catalog import DATA, merge, read_facts, write_instances, as_of_in_future, read_instances

CLOUD = "gcp"
SOURCES = ("skypilot_v8_gcp_006059e0.csv", "skypilot_v8_gcp_006059e0_sizes.csv")
PRICES = "cyclenerd_gcp_pricing_fd66b26f.csv"
SNAPSHOT_NAME = "skypilot-org/skypilot-catalog@006059e0 catalogs/v8/gcp/vms.csv"
# The snapshot carries no date. Rows it adds carry no price, so this date only says how old the
# availability list may be: the v8 catalog is known only as "2026" (shared/reference/prices.md
# dates its other SkyPilot v8 GCP numbers the same way). Never today's date.
AVAILABILITY_AS_OF = "2026-01-01"
AVAILABILITY_NOTE = ("availability only (region and zones) from the undated snapshot, known only "
                     "as 2026; no dated price: its A2/A3 Price column is the host without the "
                     "per-GPU SKU; run 'reclaunch catalog refresh' to price it")
FACT_COLUMNS = ("cloud", "instance_type", "gpu", "gpu_count", "gpu_memory_gib", "intra_node",
                "nvlink", "nvlink_gbs_per_gpu", "fabric", "nics", "network_gbps", "gpudirect",
                "vcpus", "ram_gib", "local_nvme_gb")


def availability(snapshot_rows, facts, cloud: str = CLOUD) -> dict[tuple[str, str], list[str]]:
    """(instance type, region) -> sorted zones, for the instance types in the facts table."""
    wanted = {it for (c, it) in facts if c == cloud}
    out: dict[tuple[str, str], set[str]] = {}
    for r in snapshot_rows:
        it = (r.get("InstanceType") or "").strip()
        if it not in wanted:
            continue
        region, zone = r["Region"].strip(), (r.get("AvailabilityZone") or "").strip()
        out.setdefault((it, region), set()).update([zone] if zone else [])
    return {k: sorted(v) for k, v in out.items()}


def build_rows(avail, facts, existing: list[dict], snapshot: str = SNAPSHOT_NAME,
               cloud: str = CLOUD) -> list[dict]:
    """One row per (type, region) the snapshot lists: the bundled row (with zones) where one
    exists, an availability-only row otherwise. Bundled rows of a type the snapshot covers but in a
    region it does not list are kept too: they carry their own dated source."""
    have = {(r["instance_type"], r["region"]): r for r in existing if r["cloud"] == cloud}
    covered = {it for (it, _) in avail}
    rows = []
    for (it, region), zones in sorted(avail.items()):
        old = have.get((it, region))
        if old is not None:
            rows.append({**old, "zones": " ".join(zones)})
            continue
        fact = facts[(cloud, it)]
        row = {c: fact[c] for c in FACT_COLUMNS}
        row.update(region=region, on_demand_usd="", spot_usd="", spot_low_usd="", spot_high_usd="",
                   price_as_of=AVAILABILITY_AS_OF, source=f"availability only, no price: {snapshot}; {AVAILABILITY_NOTE}",
                   zones=" ".join(zones), purchase=fact.get("purchase") or "on-demand",
                   purchase_usd="")
        rows.append(row)
    rows += [r for (it, region), r in have.items() if it in covered and (it, region) not in avail]
    return rows


PRICES_NAME = "Cyclenerd/google-cloud-pricing-cost-calculator@fd66b26f pricing.yml"
PRICES_AS_OF = "2026-07-30"   # pricing.yml about.generated: Thu Jul 30 06:13:17 2026


def read_prices(rows) -> dict[tuple[str, str], tuple[float | None, float | None]]:
    """(machine type, region) -> (hour, hour_spot) from the pricing.yml extract."""
    def num(v):
        try:
            x = float(v)
        except (TypeError, ValueError):
            return None
        return x if x > 0 else None
    return {(r["machine_type"], r["region"]): (num(r.get("hour")), num(r.get("hour_spot"))) for r in rows}


def price_rows(rows: list[dict], prices, facts, cloud: str = CLOUD,
               snapshot: str = SNAPSHOT_NAME) -> list[dict]:
    """Price every row that has no price of its own from the dated pricing.yml extract."""
    out = []
    for r in rows:
        got = prices.get((r["instance_type"], r["region"]))
        if got is None or r["on_demand_usd"] or r["spot_usd"] or r.get("purchase_usd"):
            out.append(r)
            continue
        od, spot = got
        purchase = facts[(cloud, r["instance_type"])].get("purchase") or "on-demand"
        if purchase != "on-demand":
            od = None     # not sold on demand: pricing.yml's hour is a price nobody can pay
        if od is None and spot is None:
            out.append(r)
            continue
        how = "" if purchase == "on-demand" else f"; sold as {purchase} only: spot price only"
        out.append({**r, "on_demand_usd": _fmt(od), "spot_usd": _fmt(spot), "spot_low_usd": "",
                    "spot_high_usd": "", "price_as_of": PRICES_AS_OF,
                    "source": f"{PRICES_NAME} (generated {PRICES_AS_OF}; whole machine: vCPU + "
                              f"RAM + GPU + bundled local SSD SKUs){how}; zones: {snapshot}"})
    return out


def _fmt(v: float | None) -> str:
    from reclaunch.catalog.build_catalog import _fmt as fixed

    return fixed(v, 4)


def is_availability_only(row_source: str) -> bool:
    return AVAILABILITY_NOTE in row_source



def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gcp", nargs="+", type=Path, default=sources.defaults(SOURCES),
                    help="SkyPilot catalogs/v8/gcp/vms.csv or extracts of it")
    ap.add_argument("--prices", type=Path, default=sources.source_path(PRICES),
                    help="pricing.yml extract: machine_type,region,hour,hour_spot")
    ap.add_argument("--snapshot", default=SNAPSHOT_NAME, help="repo@commit path, written into new rows' source")
    ap.add_argument("--out", type=Path, default=DATA / "instances.csv")
    ap.add_argument("--write", action="store_true", help="write --out (default: print a summary only)")
    a = ap.parse_args(argv)
    facts = read_facts()
    snap, price_rows_in = sources.read_csv_rows(a.gcp), sources.read_csv_rows([a.prices])
    if snap is None or price_rows_in is None:
        return 2
    avail = availability(snap, facts)
    existing = read_instances(a.out)
    generated = price_rows(build_rows(avail, facts, existing, a.snapshot), read_prices(price_rows_in), facts)
    merged = merge(existing, generated, CLOUD)
    by_type: dict[str, list[str]] = {}
    for (it, region) in sorted(avail):
        by_type.setdefault(it, []).append(region)
    for it, regions in by_type.items():
        print(f"{it}: {len(regions)} regions: {' '.join(regions)}")
    new = sum(1 for r in generated if is_availability_only(r["source"]))
    priced = sum(1 for r in generated if r["source"].startswith(PRICES_NAME))
    print(f"{len(generated)} GCP rows of covered types ({priced} priced from {PRICES_NAME}, "
          f"{new} availability-only); {len(merged)} rows in all")
    if a.write:
        write_instances(a.out, merged)
    return 0


if __name__ == "__main__":
    sys.exit(main())
