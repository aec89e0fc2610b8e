"""What the catalog generators share: each cloud's generator (providers/<cloud>/catalog_rows.py,
run by hand when a newer snapshot is read) turns another project's catalog file into rows of
the bundled data/instances.csv, with the GPU, fabric and host facts from data/instance_types.csv
(the authoritative table). Not on any start-up path.

SkyPilot's `catalogs/v*/<cloud>/vms.csv` rows (InstanceType, Price, SpotPrice, Region,
AvailabilityZone) aggregate per (instance type, region) here; a file without a date is dated by
the caller's --as-of (a dated receipt of the same numbers), never a guess.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import re
import sys
from collections import defaultdict
from pathlib import Path

from reclaunch.catalog import sources

DATA = Path(__file__).with_name("data")
# AWS Local Zone AZ IDs (use1-atl2-az1, usw2-lax1-az1) are a metro edge site, not an AZ of the
# region: EKS node groups and EFA clusters are built in the region's own AZs.
_LOCAL_ZONE = re.compile(r"^[a-z]+\d-[a-z]+\d+-az\d+$")


def _f(v: str | None) -> float | None:
    v = (v or "").strip()
    try:
        x = float(v)
    except ValueError:
        return None
    return x if x > 0 else None


def read_facts(path: Path = DATA / "instance_types.csv") -> dict[tuple[str, str], dict[str, str]]:
    with path.open() as fh:
        return {(r["cloud"], r["instance_type"]): r for r in csv.DictReader(fh)}


def aggregate(snapshot_rows, facts: dict[tuple[str, str], dict[str, str]], cloud: str):
    """(instance, region) -> {"on_demand", "spots", "zones"} for the instance types in facts."""
    wanted = {it for (c, it) in facts if c == cloud}
    out: dict[tuple[str, str], dict] = defaultdict(lambda: {"on_demand": set(), "spots": [], "zones": []})
    for r in snapshot_rows:
        it = r.get("InstanceType", "")
        az = (r.get("AvailabilityZone") or "").strip()
        if it not in wanted or _LOCAL_ZONE.match(az):
            continue
        cell = out[(it, r["Region"].strip())]
        od = _f(r.get("Price"))
        if od is not None:
            cell["on_demand"].add(od)
        cell["zones"].append(az)
        cell["spots"].append(_f(r.get("SpotPrice")))
    return out


def build_rows(cells, facts, snapshot: str, as_of: dt.date, cloud: str) -> tuple[list[dict], list[str]]:
    rows, notes = [], []
    for (it, region), cell in sorted(cells.items()):
        fact = facts[(cloud, it)]
        ods = sorted(cell["on_demand"])
        od = max(ods) if ods else None
        if len(ods) > 1:
            notes.append(f"{it} {region}: AZs disagree on on-demand {ods}; kept the highest")
        # An AZ whose spot price is the on-demand price has no spot discount (AWS caps spot at
        # on-demand); it is left out of the range, as the bundled rows always did.
        # SkyPilot rounds spot to 6 decimals and on-demand to 5 (30.097800 vs 30.09784): "at
        # on-demand" means within 0.1%.
        spots = [s for s in cell["spots"] if s is not None and (od is None or s < od * 0.999)]
        purchase = fact.get("purchase") or "on-demand"
        if od is None and purchase == "on-demand" and not spots:
            notes.append(f"{it} {region}: listed without any price; skipped")
            continue
        lo, hi = (min(spots), max(spots)) if spots else (None, None)
        mid = round((lo + hi) / 2, 2) if spots else None
        how = (f"spot = midpoint of {len(spots)} AZ(s) below on-demand" if spots
               else "no AZ with a spot price below on-demand")
        if od is None:
            how = f"not sold on demand ({purchase}: price not in the snapshot); " + how
        row = {c: fact[c] for c in ("cloud", "instance_type", "gpu", "gpu_count", "gpu_memory_gib",
                                     "intra_node", "nvlink", "nvlink_gbs_per_gpu", "fabric", "nics",
                                     "network_gbps", "gpudirect", "vcpus", "ram_gib", "local_nvme_gb")}
        row.update(region=region, on_demand_usd=_fmt(od, 4), spot_usd=_fmt(mid, 2),
                   spot_low_usd=_fmt(lo, 2), spot_high_usd=_fmt(hi, 2), price_as_of=as_of.isoformat(),
                   source=f"{snapshot}; {how}", zones=" ".join(sorted(set(cell["zones"]))),
                   purchase="on-demand" if od is not None else purchase, purchase_usd="")
        rows.append(row)
    return rows, notes


def _fmt(v: float | None, digits: int) -> str:
    # Fixed decimals, trailing zeros dropped: ":g" would keep only 6 significant digits and
    # turn p6-b200's 113.9328 into 113.933.
    return "" if v is None else (f"{round(v, digits):.{digits}f}".rstrip("0").rstrip(".") or "0")


def merge(existing: list[dict], generated: list[dict], cloud: str) -> list[dict]:
    covered = {r["instance_type"] for r in generated}
    kept = [r for r in existing if not (r["cloud"] == cloud and r["instance_type"] in covered)]
    return sorted(kept + generated, key=lambda r: (r["cloud"], r["instance_type"], r["region"]))


def read_instances(path: Path) -> list[dict]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def as_of_in_future(as_of: dt.date) -> bool:
    """A snapshot cannot be dated after today (prints why)."""
    if as_of > dt.date.today():
        print(f"--as-of {as_of} is in the future", file=sys.stderr)
        return True
    return False


def write_instances(out: Path, rows: list[dict]) -> None:
    """Write the bundled instances.csv (every generator ends here)."""
    from reclaunch.catalog import INSTANCE_COLUMNS

    with out.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=INSTANCE_COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in INSTANCE_COLUMNS})
    print(f"wrote {out}")


def read_inputs(argv: list[str] | None, doc: str, flag: str, files_help: str,
                defaults: tuple[str, ...], snapshot: str | None, as_of_help: str):
    """The generators' command line: --<flag> FILE..., --snapshot, --as-of, --out, --write.
    (args, facts, snapshot rows), or None after one line saying why (a date in the future, a
    missing file): the caller exits 2."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument(f"--{flag}", dest="files", nargs="+", type=Path,
                    default=sources.defaults(defaults), help=files_help)
    ap.add_argument("--snapshot", required=snapshot is None, default=snapshot,
                    help="repo@commit path, written into every row's source")
    ap.add_argument("--as-of", required=True, type=dt.date.fromisoformat, help=as_of_help)
    ap.add_argument("--out", type=Path, default=DATA / "instances.csv")
    ap.add_argument("--write", action="store_true", help="write --out (default: print a summary only)")
    a = ap.parse_args(argv)
    if as_of_in_future(a.as_of):
        return None
    snap = sources.read_csv_rows(a.files)
    return None if snap is None else (a, read_facts(), snap)


def report(a, notes: list[str], lines: list[str], generated: list[dict], merged: list[dict]) -> int:
    """The generators' end: notes on stderr, one line per what was read, the counts, and the
    catalog written with --write."""
    for n in notes:
        print("note:", n, file=sys.stderr)
    for line in lines:
        print(line)
    print(f"{len(generated)} generated rows; {len(merged)} rows in all")
    if a.write:
        write_instances(a.out, merged)
    return 0
