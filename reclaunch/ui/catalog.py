"""Catalog output: a rich table for people, JSON for tools. Stale prices are flagged."""

from __future__ import annotations

import datetime as dt

from reclaunch.catalog import STALE_AFTER_DAYS, Catalog, Offer


def _usd(v: float | None) -> str:
    return "-" if v is None else f"{v:,.2f}"


def offers_json(rows: list[Offer], catalog: Catalog, today: dt.date | None = None) -> list[dict]:
    out = []
    for o in rows:
        d = o.to_row()
        for k in ("gpu_count", "nics", "vcpus"):
            d[k] = int(d[k]) if d[k] else 0
        for k in ("gpu_memory_gib", "nvlink_gbs_per_gpu", "network_gbps", "ram_gib", "local_nvme_gb",
                  "on_demand_usd", "spot_usd", "spot_low_usd", "spot_high_usd"):
            d[k] = float(d[k]) if d[k] != "" else None
        d["gpudirect"] = o.gpudirect
        d["stale"] = o.is_stale(today)
        d["age_days"] = o.age_days(today)
        d["origin"] = o.origin
        d["catalog_version"] = catalog.version
        out.append(d)
    return out


def offers_table(rows: list[Offer], catalog: Catalog, today: dt.date | None = None):
    from rich.table import Table

    t = Table(title=f"reclaunch catalog {catalog.version} — USD per instance-hour",
              caption=f"* price older than {STALE_AFTER_DAYS} days: run `reclaunch catalog refresh`")
    for col, just in (("cloud", "left"), ("instance", "left"), ("region", "left"), ("GPUs", "left"),
                      ("fabric", "left"), ("vCPU", "right"), ("RAM GiB", "right"),
                      ("on-demand", "right"), ("spot", "right"), ("as of", "left"), ("source", "left")):
        t.add_column(col, justify=just, overflow="fold")
    for o in rows:
        stale = o.is_stale(today)
        spot = _usd(o.spot_usd)
        if o.spot_low_usd is not None and o.spot_high_usd is not None:
            spot += f" ({o.spot_low_usd:.2f}-{o.spot_high_usd:.2f})"
        fabric = o.fabric + (f" x{o.nics}" if o.nics > 1 else "") + f" {o.network_gbps:g}G"
        t.add_row(o.cloud, o.instance_type, o.region, f"{o.gpu_count} x {o.gpu}", fabric,
                  str(o.vcpus), f"{o.ram_gib:g}", _usd(o.on_demand_usd), spot,
                  o.price_as_of.isoformat() + (" *" if stale else ""),
                  o.source[:60] + ("…" if len(o.source) > 60 else ""),
                  style="yellow" if stale else None)
    return t


def select_offers(cat, *, cloud=None, gpu=None, region=None) -> list:
    """Rows for `reclaunch catalog`: --gpu is matched like the spec's gpu field ("A100" names
    both A100 models); an unknown GPU is a usage error naming the known ones."""
    from reclaunch.catalog import offers
    from reclaunch.errors import UsageError
    if gpu is None:
        rows = offers(cat, cloud=cloud, region=region)
    else:
        import re

        from reclaunch.spec import normalize_gpu

        known = sorted(cat.gpus)
        got = normalize_gpu(gpu, known)
        if isinstance(got, str):
            names = [got]
        else:
            # "A100" names two models: show both. A look-alike ("80GB" -> L40S-48GB) is no match.
            key = re.sub(r"[\s_]+", "-", gpu.strip().upper()).replace("GIB", "GB")
            names = [g for g in got if key and g.startswith(key + "-")]
            if not names:
                hint = (f" — did you mean {' or '.join(got)}?" if got
                        else f"; known: {', '.join(known)}")
                raise UsageError(f"--gpu {gpu!r}: unknown GPU{hint}")
        # A known GPU that --cloud/--region filter out is an empty table, not "unknown".
        rows = [o for g in names for o in offers(cat, cloud=cloud, gpu=g, region=region)]
    return rows
