"""Regenerate the bundled catalog's Azure rows from a SkyPilot Azure catalog snapshot. Not on any
start-up path: run by hand when a newer snapshot is read, then review the diff and commit.

    python -m reclaunch.providers.azure.catalog_rows --as-of 2026-11-09 [--azure FILE ...] [--write]

Input: SkyPilot's `catalogs/v6/azure/vms.csv` (github.com/skypilot-org/skypilot-catalog; the v8
catalog has no Azure file). The default --azure files are the extracts in
../shared/reference/catalog-sources/ (SOURCES below; another project's
file, so not package data): skypilot_v6_azure_098741e7.csv (the 4- and 8-GPU types) and
skypilot_v6_azure_098741e7_sizes.csv (NC24ads/NC48ads A100 v4, NC40ads/NC80adis H100 v5), the
rows of the Azure types in data/instance_types.csv, verbatim, of the copy read at commit
098741e70562f65d7af1cceb81e33b284f742604. Azure sells no L4 VM, and the file has no ND H200 v5
or ND GB200 v6 row (newer than the snapshot): those have no dated source and are not listed. Columns used: InstanceType, Price (on-demand, Linux),
SpotPrice (one per region: Azure spot is not per zone in this file), Region. Its AcceleratorCount
is not used (it says 12 for ND96isr_H100_v5; the facts table is authoritative).

Date: the file carries none. It is dated the way the AWS snapshot is (providers/aws/catalog_rows.py): its
eastus Standard_ND96asr_v4 (27.197) and Standard_ND96isr_H100_v5 (98.32) prices are exactly the
ones receipted on 2026-11-09 in shared/reference/prices.md (3.3996 and 12.29 per GPU), so
--as-of 2026-11-09; RECEIPTS below lets the data test check that match.

Coverage: the v6 Azure file lists US regions only (centralus, eastus, eastus2, northcentralus,
southcentralus, westcentralus, westus, westus2, westus3), so a region it does not list is NOT
taken to mean "not sold there": bundled rows in other regions are kept as they are. A spot price
equal to on-demand (ND96isr_H100_v5 in this file) is no spot discount and is left out, as for AWS.
"""

from __future__ import annotations

import datetime as dt
import sys

from reclaunch.catalog.build_catalog import (aggregate, build_rows, read_inputs, read_instances,
                                             report)

CLOUD = "azure"
SOURCES = ("skypilot_v6_azure_098741e7.csv", "skypilot_v6_azure_098741e7_sizes.csv")
SNAPSHOT_NAME = "skypilot-org/skypilot-catalog@098741e7 catalogs/v6/azure/vms.csv"
AS_OF = dt.date(2026, 11, 9)
# (instance type, region) -> on-demand USD/h receipted on AS_OF (shared/reference/prices.md).
RECEIPTS = {("Standard_ND96asr_v4", "eastus"): 27.197,
            ("Standard_ND96isr_H100_v5", "eastus"): 98.32}


def generate(snapshot_rows, facts, snapshot: str = SNAPSHOT_NAME, as_of: dt.date = AS_OF):
    # The file has no AvailabilityZone column: every row aggregates as one zone-less cell.
    rows = ({**r, "AvailabilityZone": ""} for r in snapshot_rows)
    out, notes = build_rows(aggregate(rows, facts, CLOUD), facts, snapshot, as_of, CLOUD)
    for r in out:   # build_rows words the spot note for AWS AZs; Azure gives one price a region
        r["source"] = (r["source"].replace("midpoint of 1 AZ(s) below on-demand", "the region's price")
                       .replace("no AZ with a spot price below on-demand", "none (the file's spot is the on-demand price)"))
    return out, notes


def merge_regions(existing: list[dict], generated: list[dict]) -> list[dict]:
    """Replace the bundled rows the snapshot lists; keep every other row (see Coverage above)."""
    new = {(r["cloud"], r["instance_type"], r["region"]) for r in generated}
    kept = [r for r in existing if (r["cloud"], r["instance_type"], r["region"]) not in new]
    return sorted(kept + generated, key=lambda r: (r["cloud"], r["instance_type"], r["region"]))



def main(argv: list[str] | None = None) -> int:
    got = read_inputs(argv, __doc__, "azure", "SkyPilot catalogs/v6/azure/vms.csv or extracts of it",
                      SOURCES, SNAPSHOT_NAME, "the date the snapshot's prices are known to hold "
                      "(a dated receipt of the same numbers)")
    if got is None:
        return 2
    a, facts, snap = got
    generated, notes = generate(snap, facts, a.snapshot, a.as_of)
    existing = read_instances(a.out)
    merged = merge_regions(existing, generated)
    return report(a, notes, [f"{r['instance_type']} {r['region']}: {r['on_demand_usd'] or '-'} / "
                             f"spot {r['spot_usd'] or '-'}" for r in generated], generated, merged)


if __name__ == "__main__":
    sys.exit(main())
