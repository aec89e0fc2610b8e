"""The one registry of targets and fabrics, and the shape of what each declares.

Every fact about a cloud that a pure layer needs (the spec's choices, storage kinds,
reservations, the cluster-name rule, spot taints, node reserves, planner prices, preview mock
outputs, its add-ons and fabrics) is declared once, in that cloud's own package:
`reclaunch/providers/<cloud>/facts.py`, a module of plain data that imports nothing but this
one. This module sits at the bottom of the layers (tests/layout: "facts"), so catalog, spec,
fabric, planner, stacks and manifests all read the same object (SkyPilot keeps a cloud's facts
on one `Cloud` class; dstack names every backend in one `BackendType`).

A facts file is loaded from its path, never by importing its package: `providers/<cloud>/
__init__.py` is the provider (SDKs, the runtime) and must not run when the catalog asks which
clouds exist. A cloud outside this tree registers through RECLAUNCH_CLOUDS, a comma-separated
list of importable modules that each define FACTS (a CloudFacts); `reload()` re-reads both.
"""

import importlib
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Iterator, Mapping, NamedTuple

# The one registry line per built-in cloud: its provider package under reclaunch/providers/.
BUILTIN: tuple[str, ...] = ("aws", "azure", "gcp", "kubernetes", "local")
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


# The records below are NamedTuples: immutable, read by attribute or keyword, with defaults,
# == and repr, and defined without compiling the methods a frozen dataclass adds (every
# command loads the registry). Without `from __future__ import annotations` here: NamedTuple
# would compile every string annotation as a ForwardRef.
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


ETHERNET = FabricFacts("ethernet", generic=True)
GLOO = FabricFacts("gloo", selectable=False)   # torch.distributed over loopback (cloud: local)


class PreviewFacts(NamedTuple):
    """What `reclaunch preview` (Pulumi mocks) needs of a cloud's SDK."""

    sdk_packages: Mapping[str, str] = _EMPTY  # type prefix -> Python package
    nested_tags: Mapping[str, str] = _EMPTY   # type -> input holding tags
    # (type, name, inputs) -> outputs a program reads back; (token, args, region) -> result.
    outputs: Callable[[str, str, dict], dict] = lambda typ, name, inputs: {}
    calls: Callable[[str, dict, str], dict] = lambda token, args, region: {}
    # "module:ATTR": (type, name, inputs) -> [what the cloud's API refuses there], for the
    # types of its sdk_packages (stacks/refusals.py); preview adds them to `engine`.
    refusals: str | None = None


class CloudFacts(NamedTuple):
    """Everything a pure layer needs to know of one target, declared in its facts.py."""

    name: str
    kind: str                                  # "kube": a Pulumi stack + PyTorchJob; "here"
    provider: str                              # module whose provider() is the Provider
    stack: str | None = None                   # stacks package (stacks.StackFacts), if any
    storage: tuple[str, ...] = ("none",)       # spec.facts.STORAGE_KINDS this target provides
    reservation_kinds: tuple[str, ...] = ()    # spec.rules.RESERVATION_ID kinds it sells
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
    # planner.yaml's per-cloud numbers: reclaim_rate_per_node_hour, control_plane_usd_per_hour,
    # pvc_usd_per_gb_month (each with its source in the facts file).
    planner: Mapping[str, float] = _EMPTY
    preview: PreviewFacts = PreviewFacts()
    # Pulumi type prefixes of the cluster and its nodes: `down --keep-storage` never keeps them.
    compute_types: tuple[str, ...] = ()
    offers: str | None = None                  # catalog rows CSV next to the facts file
    home: Path | None = None                   # the facts file's folder (set by the loader)
    # Other names people write for this target (`cloud: amazon`): validate's "did you mean".
    aliases: tuple[str, ...] = ()
    # The zone names a spec may give in a region, from the catalog's zone data of that region
    # (region, its rows' zones) -> names; None: the catalog's zones are the names (spec/rules.py).
    zone_names: Callable[[str, tuple[str, ...]], tuple[str, ...]] | None = None

    @property
    def runs_here(self) -> bool:
        return self.kind == "here"


def _load_file(cloud: str) -> CloudFacts:
    home = Path(__file__).with_name("providers") / cloud
    # Registered under its package's name, so a provider that imports its own facts module
    # gets this same object; the package's __init__ (the provider) does not run. PathFinder
    # over that one folder also finds it inside a wheel run as a zip (zipimport).
    name = f"{__package__}.providers.{cloud}.facts"
    if name not in sys.modules:
        spec = importlib.machinery.PathFinder.find_spec(name, [str(home)])
        if spec is None:
            raise ImportError(f"no facts.py for cloud {cloud!r} in {home}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return _placed(sys.modules[name].FACTS, home)


def _placed(facts: CloudFacts, home: Path) -> CloudFacts:
    return facts if facts.home else facts._replace(home=home)


def _load_plugin(module: str) -> CloudFacts:
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:   # a person's setting: one line (exit 2), not an internal error
        from reclaunch.errors import UsageError

        raise UsageError(f"{PLUGINS_ENV}: cannot import {module!r} ({exc})",
                         hint="put its package on PYTHONPATH, or unset the variable") from None
    return _placed(mod.FACTS, Path(mod.__file__).parent)


_registry: dict[str, CloudFacts] | None = None
_generation = 0


def _all() -> dict[str, CloudFacts]:
    global _registry
    if _registry is None:
        found = {c: _load_file(c) for c in BUILTIN}
        for module in filter(None, (m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(","))):
            f = _load_plugin(module)
            found[f.name] = f
        _registry = found
    return _registry


def reload() -> None:
    """Read the registry again (after RECLAUNCH_CLOUDS changed); caches keyed by generation()
    (the bundled catalog, the fabric profiles) follow."""
    global _registry, _generation
    _registry = None
    _generation += 1


def generation() -> int:
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


def fabrics() -> dict[str, FabricFacts]:
    """Every fabric any target declares, by name; generic ones (ethernet) last."""
    out: dict[str, FabricFacts] = {}
    for f in _all().values():
        for fab in f.fabrics:
            out.setdefault(fab.name, fab)
    return dict(sorted(out.items(), key=lambda kv: kv[1].generic))


def fabric(name: str) -> FabricFacts:
    return fabrics().get(name) or FabricFacts(name)


def selectable_fabrics() -> tuple[str, ...]:
    """The values `interconnect.inter_node` takes besides "auto"."""
    return tuple(n for n, f in fabrics().items() if f.selectable)


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
