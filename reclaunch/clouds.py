"""The one registry of targets and fabrics, and the shape of what each declares.

Every fact about a cloud that a pure layer needs (the spec's choices, storage kinds, reservations,
the cluster-name rule, spot taints, node reserves, planner prices and startup, preview mocks,
add-ons and fabrics) is declared once, in that cloud's own package: `<package>/facts.py`, a
module of plain data that imports nothing but this one. This module sits at the bottom of the
layers (tests/layout: "facts"), so catalog, spec, fabric, planner, stacks and manifests all read
the same object (SkyPilot keeps a cloud's facts on one `Cloud` class; dstack names every backend
in one `BackendType`).

A cloud package has three parts that show its layers: `facts.py` (data, the bottom),
`provider.py` (behaviour: SDKs, the runtime; the top) and an empty `__init__.py`, so importing
the facts never runs the provider. The built-in clouds are BUILTIN below; a cloud from outside
this tree registers through the entry-point group GROUP (as TorchX's `torchx.schedulers`):

    [project.entry-points."reclaunch.clouds"]
    toy = "toycloud.facts"

or, for tests and one-off runs, RECLAUNCH_CLOUDS: a comma-separated list of such modules.
`reload()` reads both again.
"""

import importlib
import os
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Iterator, Mapping, NamedTuple

from reclaunch.errors import UsageError

# The one registry line per built-in cloud: its package under reclaunch/providers/ (and, for a
# cloud with a stack, stacks/<name>/).
BUILTIN: tuple[str, ...] = ("aws", "azure", "gcp", "kubernetes", "local")
GROUP = "reclaunch.clouds"          # entry points: name = cloud, value = its facts module
PLUGINS_ENV = "RECLAUNCH_CLOUDS"

# A cluster name: it names the stack, the tags, the journal record and a directory, never a
# path (spec.Spec.name, the CLI verbs and the journal all check this one pattern).
CLUSTER_NAME = r"[a-z0-9-]{1,40}"
# What a cluster name must also be on a target whose names reach Kubernetes: the PyTorchJob's
# per-replica Services must be DNS-1035 labels (start with a letter:
# kubernetes.io/docs/concepts/overview/working-with-objects/names), as must GCP resource names
# (cloud.google.com/compute/docs/naming-resources: [a-z]([-a-z0-9]*[a-z0-9])?).
DNS_1035 = (r"[a-z]([-a-z0-9]*[a-z0-9])?",
            "must start with a letter and end with a letter or digit (a DNS-1035 label: "
            "Kubernetes Service and GCP resource names are made from it)")


# The records are NamedTuples: immutable, with defaults, == and repr, cheaper to define than
# frozen dataclasses (every command loads them); no `from __future__ import annotations` here.
_EMPTY: Mapping[str, Any] = MappingProxyType({})


class FabricFacts(NamedTuple):
    """What the stacks and add-ons need to know of an inter-node fabric (the NCCL side of it
    is its FabricProfile rows in reclaunch/fabric/profiles.py, or `profiles`)."""

    name: str
    addons: tuple[str, ...] = ()         # k8s/addons.yaml entries only this fabric needs
    nic: str | None = None               # extra NIC type each GPU node attaches ("efa")
    node_group: bool = False             # nodes share the fabric per pool (InfiniBand: per VMSS)
    mtu: int | None = None               # MTU of the fabric's own VPC networks (GKE multi-NIC)
    device_mode: str = "NetDevice"       # GKENetworkParamSet deviceMode of those networks
    roce: bool = False                   # its networks take the zone's RoCE network profile
    prerequisites: tuple[str, ...] = ()  # manual steps a cluster on this fabric needs first
    selectable: bool = True              # a value of `interconnect.inter_node`
    generic: bool = False                # offered by several clouds (listed last)
    profiles: str | None = None          # "module:ATTR", FabricProfiles outside fabric/profiles.py
    # Huge pages the fabric's node image reserves at boot, whatever the pods ask for:
    # {resource, page_bytes, per_vcpu, extra} -> per_vcpu x vCPUs + extra pages (catalog/node.py).
    boot_hugepages: Mapping[str, Any] = _EMPTY


class ReservationKind(NamedTuple):
    """Capacity a person buys ahead and `up` launches into (`capacity: {kind, reservation}`)."""

    name: str
    pattern: str                        # regex a reservation of this kind matches
    example: str                        # shown when a reservation does not match
    fixed_count: str | None = None      # why max_nodes cannot exceed nodes (a fixed count)


class Steps(NamedTuple):
    """What a sized storage kind creates (and bills) for a `storage.size`: in the first tier
    that holds it, the size rounded up to the tier's step, at least its minimum; the last tier
    stops at its maximum (what is sold without a support request)."""

    tiers: tuple[tuple[int, int, int | None], ...]   # (minimum GiB, step GiB, maximum GiB)
    decimal_tib: bool = False   # TiB of 1000 GiB (FSx's "1.2 TiB" is its 1200 GiB step)

    @property
    def maximum_gib(self) -> int | None:
        return self.tiers[-1][2]


class Existing(NamedTuple):
    """What `storage.existing` names for a kind, and the volume a static PV gets from it."""

    form: str                            # e.g. "<file system id>/<mount name>"
    example: str
    # (plan, existing) -> the PersistentVolume's volume source (`render --with-storage`).
    volume: Callable[[Any, str], dict] | None = None
    pattern: str | None = None           # when set, validate requires a value matching it


class StorageKind(NamedTuple):
    """One `storage.kind`: every layer reads this record (spec rules, the planner's price and
    rounding, render's volumes, the stacks, `down --keep-storage` and the sweep)."""

    name: str
    sized: bool = False                  # storage.size is required
    created_by_stack: bool = False       # the stack creates it and binds `<name>-data`
    mounted: bool = True                 # a directory every node sees (a bucket is fsspec)
    claim: bool = True                   # pods mount it through the `<name>-data` claim
    # Substrings of the cloud resource kinds / Pulumi types that hold the data: `down
    # --keep-storage` keeps them, and teardown verification does not count them as leftovers.
    resource_hints: tuple[str, ...] = ()
    steps: Steps | None = None           # None: not sized by reclaunch (nothing billed)
    usd_per_gb_month: float = 0.0        # of what `steps` creates (or planner["<name>_usd_..."])
    existing: Existing | None = None
    storage_class: str | None = None     # the claim's class when the spec names none ({name})
    generic: bool = False                # offered by several targets (listed last)
    # (seconds, source) the stack takes to create it, beside the cluster (planner/startup.py)
    created_in: tuple[float, str] | None = None


class ObjectStore(NamedTuple):
    """An object store job.checkpoint.path / job.dataset.path may name (SCHEME://BUCKET/PREFIX):
    the trainer reaches it through fsspec, the job's workload identity on a cloud's stack."""

    schemes: tuple[str, ...]             # URL schemes, the first the usual one
    extra: str                           # the pip extra with its fsspec implementation
    fsspec_package: str
    name_rule: tuple[str, str]           # (regex, what it means) for the bucket / container name
    # A store whose URL may name its account (CONTAINER@ACCOUNT.<account_host>): the account
    # rule (regex, "a ... name (...)"), its host suffix, and the form an existing container
    # must be given in (it names the account; {bucket}, {prefix}).
    account_rule: tuple[str, str] | None = None
    account_host: str | None = None
    account_form: str | None = None
    # (regex storage.existing must match, with an `account` group; what it is) when a stack can
    # grant rights on a bucket it did not create only by what holds it; None: its name will do.
    grant_scope: tuple[str, str] | None = None


# The S3 API: AWS, and the endpoints that speak it (MinIO, moto; cloud: local at
# AWS_ENDPOINT_URL). Bucket names: docs.aws.amazon.com/AmazonS3/latest/userguide/
# bucketnamingrules.html (3-63, lowercase, digits, dots, hyphens, start/end alphanumeric).
S3 = ObjectStore(("s3",), "s3", "s3fs",
                 (r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", "3-63 lowercase letters, digits, dots or hyphens"))

NO_STORAGE = StorageKind("none", mounted=False, generic=True)
# An object-store bucket for checkpoints (job.checkpoint.path: a URL): the stack creates it
# (cloud: local at its endpoint); no volume, no mount; priced by each planner["bucket_prices"].
BUCKET = StorageKind("bucket", mounted=False, generic=True,
                     resource_hints=("bucket", "blobcontainer", "storageaccount"))
# A CephFS the team runs, mounted through ceph-csi (the stack cannot create one).
CEPHFS = StorageKind("cephfs", generic=True, storage_class="{name}-cephfs",
                     existing=Existing("<clusterID>/<fsName>", "ceph-a/data", pattern=r"[^/]+/.+"))
# A claim the cluster's storage class provisions, in 1 GiB steps (EBS gp3, pd-balanced, Azure
# managed disk: docs.aws.amazon.com/ebs/latest/userguide/volume-types.html, gp3 1 GiB - 16 TiB);
# priced per cloud (each cloud's planner["pvc_usd_per_gb_month"]).
PVC = StorageKind("pvc", sized=True, generic=True, steps=Steps(((1, 1, None),)),
                  resource_hints=("persistentvolume", "volume", "/disk:disk", "compute/disk", "disk"),
                  created_in=(20, "assumption: a dynamically provisioned EBS / Persistent "
                                  "Disk / Managed Disk volume binds in seconds"))

ETHERNET = FabricFacts("ethernet", generic=True)
GLOO = FabricFacts("gloo", selectable=False)   # torch.distributed over loopback (cloud: local)


class PreviewFacts(NamedTuple):
    """What `reclaunch preview` (Pulumi mocks) needs of a cloud's SDK."""

    sdk_packages: Mapping[str, str] = _EMPTY  # type prefix -> Python package
    nested_tags: Mapping[str, str] = _EMPTY   # type -> input holding tags
    # (type, name, inputs) -> outputs a program reads back; (token, args, region) -> result.
    outputs: Callable[[str, str, dict], dict] = lambda typ, name, inputs: {}
    calls: Callable[[str, dict, str], dict] = lambda token, args, region: {}


class CloudFacts(NamedTuple):
    """Everything a pure layer needs to know of one target, declared in its facts.py."""

    name: str
    kind: str                                  # "kube": a Pulumi stack + PyTorchJob; "own"; "here"
    # Module whose provider() is the Provider; None: `provider` beside the facts module.
    provider: str | None = None
    # Package implementing stacks.StackFacts (kind "kube"); None: stacks/<name>/ (built-in).
    stack: str | None = None
    storage: tuple[StorageKind, ...] = (NO_STORAGE,)   # the storage kinds this target provides
    # The object stores its workload identity reaches (a cluster you bring, kind "own": any).
    object_stores: tuple[ObjectStore, ...] = ()
    reservation_kinds: tuple[ReservationKind, ...] = ()   # the reserved capacity it sells
    encryption_at_host: bool = False           # security.encryption_at_host is a choice here
    name_rule: tuple[str, str] = DNS_1035      # (regex, why) a cluster name must match
    fabrics: tuple[FabricFacts, ...] = ()
    addons: tuple[str, ...] = ()               # k8s/addons.yaml entries only this cloud installs
    spot_tolerations: tuple[Mapping[str, str], ...] = ()   # taints its managed spot pools carry
    # Node label -> {value: "spot" | "on-demand"}: how a node says what capacity it is.
    capacity_labels: Mapping[str, Mapping[str, str]] = _EMPTY
    # Node model of its managed nodes (catalog/node.py evaluates it: capacity overhead, kubelet
    # reserves, eviction threshold, max pods) and the system-pool machine shapes
    # {type: (vcpus, GiB)} its stack uses.
    allocatable: Mapping[str, Any] | None = None
    system_shapes: Mapping[str, tuple[int, float]] = _EMPTY
    # The planner's per-cloud numbers: reclaim_rate_per_node_hour, control_plane_usd_per_hour,
    # pvc_usd_per_gb_month, bucket_prices (each with its source in the facts file).
    planner: Mapping[str, float] = _EMPTY
    preview: PreviewFacts = PreviewFacts()
    # The pip extra with its SDKs and the modules it brings (`reclaunch check` looks for them).
    pip_extra: str | None = None
    sdk_modules: tuple[str, ...] = ()
    # Pulumi type prefixes of the cluster and its nodes: `down --keep-storage` never keeps them.
    compute_types: tuple[str, ...] = ()
    offers: str | None = None                  # catalog rows CSV next to the facts file
    # A YAML of add-ons beside the facts file that k8s/addons.yaml lacks (its own device plugins).
    addon_file: str | None = None
    home: Path | None = None                   # the facts file's folder (set by the loader)
    # Other names people write for this target (`cloud: amazon`): validate's "did you mean".
    aliases: tuple[str, ...] = ()
    # The zone names a spec may give in a region, from the catalog's zone data of that region
    # (region, its rows' zones) -> names; None: the catalog's zones are the names (spec/rules.py).
    zone_names: Callable[[str, tuple[str, ...]], tuple[str, ...]] | None = None

    @property
    def runs_here(self) -> bool:
        return self.kind == "here"


def _facts_of(module_name: str, where: str, undo: str = "") -> CloudFacts:
    """FACTS of a facts module, placed: its folder (`home`) and its provider module."""
    try:
        mod = importlib.import_module(module_name)
    except ImportError as exc:   # a person's setting: one line (exit 2), not an internal error
        raise UsageError(f"{where}: cannot import {module_name!r} ({exc})",
                         hint=f"put its package on PYTHONPATH, or {undo}") from None
    facts = getattr(mod, "FACTS", None)
    wrong = [f"{field} {x!r}" for field, want in _RECORDS.items()
             for x in getattr(facts, field, ()) if not isinstance(x, want)]
    if not isinstance(facts, CloudFacts) or wrong:
        raise UsageError(f"{where}: {module_name} defines no FACTS (a reclaunch.clouds.CloudFacts)"
                         if not wrong else f"{where}: {module_name}: not a record: {wrong[0]}",
                         hint="storage, reservation_kinds, fabrics and object_stores hold this "
                              "module's records (StorageKind, ReservationKind, FabricFacts, ObjectStore)")
    package = module_name.rpartition(".")[0]
    return facts._replace(home=facts.home or Path(mod.__file__).parent,
                          provider=facts.provider or f"{package}.provider")


# What each tuple field of CloudFacts holds.
_RECORDS = {"storage": StorageKind, "reservation_kinds": ReservationKind, "fabrics": FabricFacts,
            "object_stores": ObjectStore}


def _registrations() -> Iterator[tuple[str, str, str]]:
    """(facts module, where it was registered, how to undo that) for every cloud from outside."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=GROUP):
        dist = ep.dist.name if ep.dist is not None else "its distribution"
        yield ep.module, f"entry point {ep.name!r} ({GROUP})", f"uninstall {dist}"
    for module in filter(None, (m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(","))):
        yield module, PLUGINS_ENV, "unset the variable"


_registry: dict[str, CloudFacts] | None = None
_generation = 0


def _all() -> dict[str, CloudFacts]:
    global _registry
    if _registry is None:
        found = {c: _facts_of(f"{__package__}.providers.{c}.facts", "built-in") for c in BUILTIN}
        for module, where, undo in _registrations():
            f = _facts_of(module, where, undo)
            if f.name in BUILTIN:
                raise UsageError(f"{where}: {module} registers cloud {f.name!r}, which is built in",
                                 hint="give the cloud another name")
            found[f.name] = f
        _registry = found
    return _registry


def reload() -> None:
    """Read the registry again; caches keyed by generation() (catalog, fabric profiles) follow."""
    global _registry, _generation
    _registry = None
    _generation += 1


def generation() -> int:   # bumped by reload()
    return _generation


def names() -> tuple[str, ...]:
    return tuple(_all())


def kube_names() -> tuple[str, ...]:
    return tuple(c for c, f in _all().items() if f.kind == "kube")


def own_names() -> tuple[str, ...]:
    """Targets that are a cluster the team already has (kind "own": its nodes are the offers)."""
    return tuple(c for c, f in _all().items() if f.kind == "own")


def alias_of(word: object) -> str | None:
    """The target another name means (`amazon` -> aws), or None."""
    key = str(word).strip().lower()
    return next((c for c, f in _all().items() if key in f.aliases), None)


def here() -> CloudFacts:
    """The target that runs on this machine (kind "here"): its planner.yaml section holds the
    CPU-process constants, and `reclaunch calibrate` measures this host for it."""
    return next(f for f in _all().values() if f.runs_here)


def known(cloud: str) -> bool:
    return cloud in _all()


def get(cloud: str) -> CloudFacts:
    """The facts of `cloud`; KeyError names the known ones (callers validated the spec first)."""
    try:
        return _all()[cloud]
    except KeyError:
        raise KeyError(f"unknown cloud {cloud!r}; known: {', '.join(_all())}") from None


def all_facts() -> Iterator[CloudFacts]:
    return iter(_all().values())


def _gathered(records: Callable[[CloudFacts], tuple]) -> dict[str, Any]:
    """One field's records over every target, by name (the first declaration wins); those
    several targets offer (`generic`) last."""
    out: dict[str, Any] = {}
    for f in _all().values():
        for rec in records(f):
            out.setdefault(rec.name, rec)
    return dict(sorted(out.items(), key=lambda kv: kv[1].generic))


def fabrics() -> dict[str, FabricFacts]:
    """Every fabric any target declares, by name; generic ones (ethernet) last."""
    return _gathered(lambda f: f.fabrics)


def fabric(name: str) -> FabricFacts:
    return fabrics().get(name) or FabricFacts(name)


def selectable_fabrics() -> tuple[str, ...]:
    """The values `interconnect.inter_node` takes besides "auto"."""
    return tuple(n for n, f in fabrics().items() if f.selectable)


def storage_kinds() -> dict[str, StorageKind]:
    """Every storage kind any target provides, by name; generic ones (none, bucket) last."""
    return _gathered(lambda f: f.storage)


def storage_kind(name: str) -> StorageKind:
    return storage_kinds().get(name) or StorageKind(name)


def object_stores() -> dict[str, ObjectStore]:
    """Every object store any target reaches, by URL scheme."""
    return {scheme: o for f in _all().values() for o in f.object_stores for scheme in o.schemes}


def reservation_kinds() -> dict[str, ReservationKind]:
    """Every reservation kind any target sells, by name (the spec's `capacity.kind` choices)."""
    return {r.name: r for f in _all().values() for r in f.reservation_kinds}


def clouds_with_fabric(name: str) -> tuple[str, ...]:
    return tuple(c for c, f in _all().items() if any(fab.name == name for fab in f.fabrics))


class PerCloud(Mapping[str, Any]):
    """{cloud: one field of its facts}, read live (a registered cloud shows up at once)."""

    def __init__(self, pick: Callable[[CloudFacts], Any]) -> None:
        self._pick = pick

    def __getitem__(self, cloud: str) -> Any:
        if cloud not in _all():
            raise KeyError(cloud)
        return self._pick(_all()[cloud])

    def __iter__(self) -> Iterator[str]:
        return iter(_all())

    def __len__(self) -> int:
        return len(_all())
