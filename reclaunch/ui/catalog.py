"""Catalog output: a rich table for people, JSON for tools. Stale prices are flagged."""

from __future__ import annotations

import datetime as dt

from reclaunch.catalog import STALE_AFTER_DAYS, Catalog, Offer


def _usd(v: float | None) -> str:
    return "-" if v is None else f"{v:,.2f}"


def _short_source(src: str, width: int = 36) -> str:
    src = src.split(";")[0].replace("skypilot-org/", "")
    return src[:width] + ("…" if len(src) > width else "")


def _on_demand(o: Offer) -> str:
    # "-" would read as "unknown"; a Capacity-Block-only instance is sold, just not on demand.
    if o.on_demand_usd is None and o.purchase != "on-demand":
        label = {"capacity-block": "CB only", "reservation": "reserved only",
                 "flex-start": "spot/flex-start only"}.get(o.purchase, o.purchase)
        return label + (f" {o.purchase_usd:,.2f}" if o.purchase_usd is not None else "")
    return _usd(o.on_demand_usd)


def offers_json(rows: list[Offer], catalog: Catalog, today: dt.date | None = None) -> list[dict]:
    out = []
    for o in rows:
        d = o.to_row()
        for k in ("gpu_count", "nics", "vcpus"):
            d[k] = int(d[k]) if d[k] else 0
        for k in ("gpu_memory_gib", "nvlink_gbs_per_gpu", "network_gbps", "ram_gib", "local_nvme_gb",
                  "on_demand_usd", "spot_usd", "spot_low_usd", "spot_high_usd", "purchase_usd"):
            d[k] = float(d[k]) if d[k] != "" else None
        d["zones"] = o.zones.split()
        d["gpudirect"] = o.gpudirect
        d["stale"] = o.priced and o.is_stale(today)   # an unpriced row has no price to age
        d["age_days"] = o.age_days(today)
        d["origin"] = o.origin
        d["catalog_version"] = catalog.version
        out.append(d)
    return out


def offers_table(rows: list[Offer], catalog: Catalog, today: dt.date | None = None,
                 width: int | None = None, wide: bool = False):
    """One line per offer: with every region listed a wrapped row would triple the table, so
    instance facts (vCPU, RAM) stay in --json and each source is a numbered note below.
    Narrower than 140 columns, the least needed columns go (`wide`: every column, at its
    natural width) and the rest are stacked two to a column where they would not fit whole
    (ui/grid.stack): an instance or region name is never cut."""
    from rich.table import Table

    sources: dict[str, int] = {}
    for o in rows:
        sources.setdefault(_short_source(o.source, width=200), len(sources) + 1)
    regions = len({(o.cloud, o.region) for o in rows})
    from reclaunch.ui.text import shown   # overlay rows are a file's text: never markup

    notes = "\n".join(f"[{n}] {shown(s, keep_newlines=False)}" for s, n in sources.items())
    t = Table(title=f"reclaunch catalog {catalog.version} — USD per instance-hour",
              caption=f"{len(rows)} offers in {regions} regions. * price older than "
                      f"{STALE_AFTER_DAYS} days: run `reclaunch catalog refresh`. CB only = EC2 "
                      f"Capacity Blocks, no on-demand. AZs = zones listing it (--json: zones, "
                      f"vCPU, RAM, full sources).\n{notes}", caption_justify="left")
    # A narrow terminal drops the least needed columns rather than crop prices and dates.
    if width is None:
        from rich import get_console

        width = get_console().width
    drop = (() if wide or width is None or width >= 140 else ("fabric",) if width >= 120
            else ("fabric", "spot range", "AZs"))
    cols = [(c, j) for c, j in (("cloud", "left"), ("instance", "left"), ("region", "left"),
                                ("AZs", "right"), ("GPUs", "left"), ("fabric", "left"),
                                ("on-demand", "right"), ("spot", "right"), ("spot range", "right"),
                                ("as of", "left"), ("src", "right")) if c not in drop]
    table: list[tuple[list[str], str | None, bool]] = []
    for i, o in enumerate(rows):
        # An unpriced (availability-only) row's date is its listing's, not a price's: no star.
        stale = o.priced and o.is_stale(today)
        spread = (f"{o.spot_low_usd:.2f}-{o.spot_high_usd:.2f}"
                  if o.spot_low_usd is not None and o.spot_high_usd is not None else "")
        fabric = o.fabric + (f" x{o.nics}" if o.nics > 1 else "") + f" {o.network_gbps:g}G"
        last = i + 1 == len(rows) or (rows[i + 1].cloud, rows[i + 1].instance_type) != (o.cloud, o.instance_type)
        cells = {"cloud": o.cloud, "instance": o.instance_type, "region": o.region,
                 "AZs": str(len(o.zones.split())) if o.zones else "-",
                 "GPUs": f"{o.gpu_count}x {o.gpu}", "fabric": fabric, "on-demand": _on_demand(o),
                 "spot": _usd(o.spot_usd), "spot range": spread,
                 "as of": o.price_as_of.isoformat() + (" *" if stale else ""),
                 "src": str(sources[_short_source(o.source, width=200)])}
        table.append(([shown(cells[c], keep_newlines=False) for c, _ in cols],
                      "yellow" if stale else None, last))
    from rich.text import Text

    from reclaunch.ui.grid import floors, stack

    def measure(c: str) -> int:
        return Text.from_markup(c).cell_len

    if not wide and width is not None:
        cols, cells_ = stack(cols, [r for r, _, _ in table], width, measure=measure,
                             prefer=(("instance", "region"), ("on-demand", "spot"),
                                     ("spot range", "as of"), ("AZs", "GPUs")))
        table = [(c, style, last) for c, (_, style, last) in zip(cells_, table)]
    least = floors(cols, [r for r, _, _ in table], measure)
    for (col, just), low in zip(cols, least):   # rich narrows a column no further than a word
        t.add_column(col, justify=just, overflow="fold", no_wrap=wide, min_width=low)
    for cells_row, style, last in table:
        t.add_row(*cells_row, style=style, end_section=last)
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
        # "A100" names two models, "H100" the H100 and (as a filter) the H100 NVL: show them
        # all. A look-alike ("80GB" -> L40S-48GB) is no match.
        key = re.sub(r"[\s_]+", "-", gpu.strip().upper()).replace("GIB", "GB")
        if isinstance(got, str):
            names = sorted({got, *(g for g in known if key and g.startswith(key + "-"))})
        else:
            names = [g for g in got if key and g.startswith(key + "-")]
            if not names:
                hint = (f" — did you mean {' or '.join(got)}?" if got
                        else f"; known: {', '.join(known)}")
                raise UsageError(f"--gpu {gpu!r}: unknown GPU{hint}")
        # A known GPU that --cloud/--region filter out is an empty table, not "unknown".
        rows = [o for g in names for o in offers(cat, cloud=cloud, gpu=g, region=region)]
    return rows
