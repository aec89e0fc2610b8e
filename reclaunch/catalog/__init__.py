"""The instance + price catalog: versioned, dated data shipped in the package.

Query functions take the catalog as an argument so tests (and `catalog refresh`) can pass
their own. A user overlay in ~/.reclaunch/catalog/instances.csv (written by `catalog refresh`)
replaces bundled rows with the same (cloud, instance_type, region) key.
"""

from __future__ import annotations

import csv
import datetime as _dt
import os
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Mapping, NamedTuple

from reclaunch import clouds, host

STALE_AFTER_DAYS = 90

INSTANCE_COLUMNS = (
    "cloud", "instance_type", "region", "gpu", "gpu_count", "gpu_memory_gib", "intra_node",
    "nvlink", "nvlink_gbs_per_gpu", "fabric", "nics", "network_gbps", "gpudirect", "vcpus",
    "ram_gib", "local_nvme_gb", "on_demand_usd", "spot_usd", "spot_low_usd", "spot_high_usd",
    "price_as_of", "source", "zones", "purchase", "purchase_usd",
)
# How a row's instance can be bought when it has no on-demand price (AWS P5e: Capacity Blocks
# only; GCP a3-highgpu-1g/2g/4g: Spot or Flex-start VMs only). purchase_usd is the
# per-instance-hour price that way where the vendor publishes one.
PURCHASE_KINDS = ("on-demand", "capacity-block", "reservation", "flex-start")


class Gpu(NamedTuple):
    """One GPU model's memory and dense peak rates (data/gpus.csv, each row sourced).
    plan --json's "gpu" constants are its _asdict()."""

    name: str
    memory_gib: float
    hbm_tbps: float
    fp32_tflops: float
    tf32_tflops: float
    bf16_tflops: float
    fp16_tflops: float
    source: str

    def peak_tflops(self, precision: str) -> float:
        return {"fp32": self.fp32_tflops, "tf32": self.tf32_tflops,
                "bf16": self.bf16_tflops, "fp16": self.fp16_tflops}[precision]


@dataclass(frozen=True)
class Offer:
    """One (cloud, instance type, region) row."""

    cloud: str
    instance_type: str
    region: str
    gpu: str
    gpu_count: int
    gpu_memory_gib: float
    intra_node: str            # nvlink | pcie
    nvlink: str                # NVLink3 / NVLink4 / ""
    nvlink_gbs_per_gpu: float  # GB/s per GPU, 0 for PCIe
    fabric: str                # efa | infiniband | tcpx | tcpxo | rdma | ethernet
    nics: int
    network_gbps: float
    gpudirect: bool
    vcpus: int
    ram_gib: float
    local_nvme_gb: float
    on_demand_usd: float | None
    spot_usd: float | None
    spot_low_usd: float | None
    spot_high_usd: float | None
    price_as_of: _dt.date
    source: str
    origin: str = "bundled"    # bundled | overlay
    zones: str = ""            # space-separated zones (AWS AZ IDs) the snapshot lists it in
    purchase: str = "on-demand"  # PURCHASE_KINDS: how it is sold when there is no on-demand
    purchase_usd: float | None = None
    # The nodes sit on NVIDIA's own DGX SuperPOD fabric (the reference systems of published
    # results): no catalog row does; only the calibration harness (planner/published.py) sets
    # it, so those rows are planned at the all-to-all efficiency such systems reached.
    reference_fabric: bool = False

    @property
    def priced(self) -> bool:
        return any(v is not None for v in (self.on_demand_usd, self.spot_usd, self.purchase_usd))

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.cloud, self.instance_type, self.region)

    def age_days(self, today: _dt.date | None = None) -> int:
        return ((today or host.today()) - self.price_as_of).days

    def is_stale(self, today: _dt.date | None = None) -> bool:
        return self.age_days(today) > STALE_AFTER_DAYS

    def to_row(self) -> dict[str, str]:
        out = {}
        for col in INSTANCE_COLUMNS:
            v = getattr(self, col)
            out[col] = ("" if v is None else
                        ("true" if v is True else "false" if v is False else
                         v.isoformat() if isinstance(v, _dt.date) else
                         f"{v:g}" if isinstance(v, float) else str(v)))
        return out


@dataclass(frozen=True)
class Catalog:
    """Every offer and GPU, with the data's version (bundled, or bundled + the user overlay)."""

    version: str
    offers: tuple[Offer, ...]
    gpus: Mapping[str, Gpu] = field(default_factory=dict)

    # validate and plan ask a catalog of hundreds of rows several questions: each index is
    # built on the first and kept on the catalog (dataclasses.replace makes a new one).
    @cached_property
    def _first(self) -> dict[tuple[str, str], Offer]:
        first: dict[tuple[str, str], Offer] = {}
        for o in self.offers:
            first.setdefault((o.cloud, o.instance_type), o)
        return first

    @cached_property
    def _regions(self) -> dict[str, list[str]]:
        regions: dict[str, set[str]] = {}
        for o in self.offers:
            regions.setdefault(o.cloud, set()).add(o.region)
        return {c: sorted(r) for c, r in regions.items()}

    def instance(self, cloud: str, instance_type: str) -> Offer | None:
        """Any row of this instance type (facts are the same in every region)."""
        return self._first.get((cloud, instance_type))

    def instance_types(self, cloud: str | None = None) -> list[str]:
        return sorted({it for c, it in self._first if cloud in (None, c)})

    def regions(self, cloud: str | None = None) -> list[str]:
        regions = self._regions
        if cloud is not None:
            return list(regions.get(cloud, ()))
        return sorted({r for rs in regions.values() for r in rs})

    def gpu(self, name: str) -> Gpu:
        return self.gpus[name]


def _num(v: str) -> float | None:
    v = v.strip()
    return float(v) if v else None


# Offer's fields from gpu to local_nvme_gb: what an instance type is, whatever the region
# (catalog/reader.py converts them once per instance type).
FACT_COLUMNS = ("gpu", "gpu_count", "gpu_memory_gib", "intra_node", "nvlink",
                "nvlink_gbs_per_gpu", "fabric", "nics", "network_gbps", "gpudirect", "vcpus",
                "ram_gib", "local_nvme_gb")


def instance_facts(v: tuple[str, ...]) -> dict:
    """The FACT_COLUMNS values converted, in Offer's field order (the first bad one raises)."""
    gpu, count, mem, intra, nvlink, nvgbs, fabric, nics, gbps, direct, vcpus, ram, nvme = v
    return {"gpu": gpu, "gpu_count": int(count), "gpu_memory_gib": float(mem),
            "intra_node": intra, "nvlink": nvlink, "nvlink_gbs_per_gpu": float(nvgbs or 0),
            "fabric": fabric, "nics": int(nics or 0), "network_gbps": float(gbps),
            "gpudirect": direct.strip().lower() == "true", "vcpus": int(vcpus),
            "ram_gib": float(ram), "local_nvme_gb": float(nvme or 0)}


def parse_offer(row: dict[str, str], origin: str = "bundled") -> Offer:
    return Offer(   # evaluated in field order: the first bad value is the one reported
        cloud=row["cloud"], instance_type=row["instance_type"], region=row["region"],
        **instance_facts(tuple(row[c] for c in FACT_COLUMNS)),
        on_demand_usd=_num(row["on_demand_usd"]), spot_usd=_num(row["spot_usd"]),
        spot_low_usd=_num(row["spot_low_usd"]), spot_high_usd=_num(row["spot_high_usd"]),
        price_as_of=_dt.date.fromisoformat(row["price_as_of"]), source=row["source"],
        origin=origin,
        # Older overlays (written before these columns) still read: a missing column is a default.
        zones=(row.get("zones") or "").strip(),
        purchase=(row.get("purchase") or "on-demand").strip(),
        purchase_usd=_num(row.get("purchase_usd") or ""),
    )


def _read_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(line for line in text.splitlines() if line.strip()))


def user_overlay_dir() -> Path:
    """Where `catalog refresh` writes; RECLAUNCH_HOME moves all user state (tests use it)."""
    from reclaunch.home import root
    return root() / "catalog"


def write_rows(path: Path, offers: list[Offer]) -> None:
    """Write offers as a catalog CSV atomically (a torn catalog would break every plan)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)   # under ~/.reclaunch: owner-only
    tmp = path.with_suffix(".tmp")
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=INSTANCE_COLUMNS)
        w.writeheader()
        for o in sorted(offers, key=lambda o: o.key):
            w.writerow(o.to_row())
    os.replace(tmp, path)


def package_data(anchor: str, package: str, name: str, *, any_newline: bool = False) -> str:
    """data/NAME beside the module file `anchor` (of `package`): the catalog's and the
    planner's data files. A plain file read on the normal (unzipped) install; importlib.resources,
    a heavy import for every `validate` and `plan`, only when the package runs from a zip.

    The text is read_text()'s. Its newline decoder is most of the cost of the read, and ASCII
    bytes without a \r need none: they are the text in any ASCII-compatible locale encoding.
    `any_newline`: the caller splits the text with str.splitlines, which ends a line at \r\n,
    \r or \n alike, so \r may stay (the bundled CSVs are CRLF, as the csv module writes them)."""
    path = Path(anchor).with_name("data") / name
    if path.is_file():
        raw = path.read_bytes()
        if raw.isascii() and (any_newline or b"\r" not in raw):
            return raw.decode("ascii")
        return path.read_text()
    from importlib import resources

    return resources.files(package).joinpath("data", name).read_text()


def parse_yaml(text: str):
    """Our own committed data YAML, with libyaml's loader when PyYAML has it (several times
    faster than the pure-Python one, on every CLI call). A user's cluster.yaml is not read here:
    spec/yaml_lines.py keeps PyYAML's own parser and its line numbers."""
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _bundled_text(name: str) -> str:
    return package_data(__file__, __package__, name)


def _read_offers(text: str) -> tuple[Offer, ...]:
    from reclaunch.catalog.reader import read_offers   # parse_offer's values, faster

    return tuple(read_offers(text))


@lru_cache(maxsize=4)
def _bundled(generation: int = 0) -> Catalog:
    """Keyed by the cloud registry's generation: a cloud registered later brings its rows."""
    meta = parse_yaml(_bundled_text("meta.yaml"))
    # read_offers splits lines with str.splitlines: CRLF as on disk reads the same rows.
    offers = _read_offers(package_data(__file__, __package__, "instances.csv", any_newline=True))
    # A cloud whose package ships its own rows (CloudFacts.offers, next to its facts.py).
    offers += tuple(o for f in clouds.all_facts() if f.offers and f.home
                    for o in _read_offers((f.home / f.offers).read_text()))
    gpus = {}
    for r in _read_rows(_bundled_text("gpus.csv")):
        gpus[r["gpu"]] = Gpu(r["gpu"], *(float(r[c]) for c in (
            "memory_gib", "hbm_tbps", "fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops")),
            source=r["source"])
    return Catalog(version=str(meta["version"]), offers=offers, gpus=gpus)


def bundled_catalog() -> Catalog:
    return _bundled(clouds.generation())


def read_overlay(path: Path) -> list[Offer] | None:
    """The rows `catalog refresh` wrote, each checked (overlay.py); None when there is no file.
    A bad row is skipped with a `file:line` warning and the bundled row serves: a broken
    overlay must never stop planning nor put a NaN into a price."""
    from reclaunch.catalog.overlay import read_overlay as read_checked
    from reclaunch.catalog.reader import row_parser

    return read_checked(path, parse_offer, bundled_catalog().gpus,
                        row_parser=lambda header: row_parser(header, "overlay"))


def load_catalog(overlay: bool = True, overlay_dir: Path | None = None) -> Catalog:
    """The bundled catalog, with the user's refreshed rows laid over it."""
    cat = bundled_catalog()
    if not overlay:
        return cat
    extra = read_overlay((overlay_dir or user_overlay_dir()) / "instances.csv")
    if extra is None:
        return cat
    from reclaunch.catalog.overlay import far_from_bundled, warn_once

    merged = {o.key: o for o in cat.offers}
    for o in extra:   # flagged, still used: prices move, unit slips should not pass silently
        if o.key in merged and (why := far_from_bundled(o, merged[o.key])):
            warn_once(why)
    merged.update({o.key: o for o in extra})
    return replace(cat, version=f"{cat.version}+overlay", offers=tuple(merged.values()))


def offers(catalog: Catalog, cloud: str | None = None, gpu: str | None = None,
           region: str | None = None, spot: bool | None = None,
           instance_type: str | None = None) -> list[Offer]:
    """Filter the catalog. spot=True keeps offers with a spot price, False those with on-demand."""
    out = []
    for o in catalog.offers:
        if cloud and o.cloud != cloud:
            continue
        if gpu and o.gpu.lower() != gpu.lower():
            continue
        if region and o.region != region:
            continue
        if instance_type and o.instance_type != instance_type:
            continue
        if spot is True and o.spot_usd is None:
            continue
        if spot is False and o.on_demand_usd is None:
            continue
        out.append(o)
    return sorted(out, key=lambda o: (o.cloud, o.instance_type, o.region))
