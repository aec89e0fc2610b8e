"""Regenerate the bundled catalog's AWS rows from a SkyPilot catalog snapshot. Not on any
start-up path: run by hand when a newer snapshot is read, then review the diff and commit.

    python -m reclaunch.providers.aws.catalog_rows [--aws vms.csv ...] \\
        --snapshot "skypilot-org/skypilot-catalog@00148f2a catalogs/v8/aws/vms.csv" \\
        --as-of 2026-11-09 [--write]

--aws defaults to the extract in ../shared/reference/catalog-sources/ (SOURCES below;
reclaunch/catalog/sources.py finds the folder): the rows of the 1-GPU and B200 types (g5.xlarge, g6.xlarge, g6.8xlarge,
g6e.2xlarge, p6-b200.48xlarge) of the same 00148f2a file, columns InstanceType, Price,
SpotPrice, Region, AvailabilityZone. The other AWS rows were generated from the whole file;
regenerate them by passing it.

Input: SkyPilot's `catalogs/v*/aws/vms.csv` (github.com/skypilot-org/skypilot-catalog; columns
InstanceType, Price, SpotPrice, Region, AvailabilityZone: one row per instance type and AZ ID,
on-demand Price per region from the AWS price list, SpotPrice the AZ's current spot price), or
an extract of it with at least those columns. The file carries no date, so --as-of is required:
the date the snapshot's prices are known to hold (a dated receipt of the same numbers), never a
guess.

What it writes: one row per (instance type, region) for every AWS instance type in
data/instance_types.csv (the authoritative GPU/fabric facts) that the snapshot lists, replacing
the bundled rows of those types; every other row is kept as it is. The snapshot decides where an
instance is sold: a region it does not list for a covered type is dropped.
"""

from __future__ import annotations

import sys
from collections import defaultdict

from reclaunch.catalog.build_catalog import (aggregate, build_rows, merge, read_inputs,
                                             read_instances, report)

CLOUD = "aws"
# The extract read by default (in the sources folder): the named rows of one file of another
# project at one commit.
SOURCES = ("skypilot_v8_aws_00148f2a_sizes.csv",)


def main(argv: list[str] | None = None) -> int:
    got = read_inputs(argv, __doc__, "aws", "SkyPilot catalogs/v*/aws/vms.csv (or extracts of it)",
                      SOURCES, None, "the date the snapshot's prices are known to hold (YYYY-MM-DD)")
    if got is None:
        return 2
    a, facts, snap = got
    cells = aggregate(snap, facts, CLOUD)
    generated, notes = build_rows(cells, facts, a.snapshot, a.as_of, CLOUD)
    existing = read_instances(a.out)
    merged = merge(existing, generated, CLOUD)
    per_type: dict[str, list[str]] = defaultdict(list)
    for r in generated:
        per_type[r["instance_type"]].append(r["region"])
    return report(a, notes, [f"{it}: {len(regions)} regions: {' '.join(regions)}"
                             for it, regions in sorted(per_type.items())], generated, merged)


if __name__ == "__main__":
    sys.exit(main())
