"""Per-fabric NCCL / libfabric environment and pod requirements.

The data lives in `fabric/profiles.py` and `fabric/generations.py` (PROFILES: one table, each row with source and date); this
module only looks rows up and turns them into values a renderer merges into a pod spec:

    prof = profile_for("aws", "p5.48xlarge", spec.interconnect.inter_node, catalog)
    env  = nccl_env(prof, spec.nccl.env, debug=spec.nccl.debug)      # user env wins
    req  = pod_requirements(prof, spec.name, spec.gpus_per_node)     # resources, sidecars ...
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Mapping

from reclaunch import clouds
from reclaunch.errors import PlanError
from reclaunch.fabric import inter as _inter
from reclaunch.fabric.generations import PROFILES
from reclaunch.fabric.intra import of_offer
from reclaunch.fabric.profiles import DATE, PCIE_GEN4, FabricProfile, Member
from reclaunch.spec.facts import own_cluster

__all__ = ["DATE", "PROFILES", "FabricProfile", "Member", "PodRequirements", "get_profile",
           "profile_for", "nccl_env", "pod_requirements", "gke_networks", "profiles",
           "single_node", "ld_library_export", "topology_config_map"]

DEBUG_LEVELS = ("WARN", "INFO")


@lru_cache(maxsize=4)
def _profiles(generation: int) -> tuple[FabricProfile, ...]:
    # The built-in rows, then those a registered fabric names (FabricFacts.profiles).
    extra: tuple[FabricProfile, ...] = ()
    for fab in clouds.fabrics().values():
        if fab.profiles:
            module, _, attr = fab.profiles.partition(":")
            extra += tuple(getattr(importlib.import_module(module), attr))
    return PROFILES + extra


def profiles() -> tuple[FabricProfile, ...]:
    return _profiles(clouds.generation())


def _by_name() -> dict[str, FabricProfile]:
    return {p.name: p for p in profiles()}


def get_profile(name: str) -> FabricProfile:
    """A table row by name (unresolved: no instance type, intra-node figure 0)."""
    try:
        return _by_name()[name]
    except KeyError:
        raise PlanError(f"unknown fabric profile {name!r}",
                        hint="one of " + ", ".join(_by_name())) from None


def _match(cloud: str, instance_type: str,
           fabric: str | None = None) -> tuple[FabricProfile, Member] | None:
    """The row whose member prefix is the longest match for this instance type."""
    best: tuple[int, FabricProfile, Member] | None = None
    it = instance_type.lower()
    for p in profiles():
        # A cluster you bring runs the vendors' instances: their rows apply by instance type
        # (the prefixes are unique across clouds); its offers say when the nodes lack the fabric.
        mine = cloud in p.clouds or (own_cluster(cloud) and p.fabric != "gloo")
        if not mine or (fabric is not None and p.fabric != fabric):
            continue
        for m in p.members:
            if it.startswith(m.prefix.lower()) and (best is None or len(m.prefix) > best[0]):
                best = (len(m.prefix), p, m)
    return None if best is None else (best[1], best[2])


def _resolve(p: FabricProfile, m: Member, instance_type: str, intra: float | None = None,
             warning: str | None = None, offer: Any = None) -> FabricProfile:
    family = p.inter_node_busbw_gbs if m.inter_node_busbw_gbs is None else m.inter_node_busbw_gbs
    return p._replace(
        instance_type=instance_type,
        intra_node_busbw_gbs=m.intra_node_busbw_gbs if intra is None else intra,
        # capped by the instance's own network (fabric/inter.py)
        inter_node_busbw_gbs=_inter.of_offer(family, offer).busbw_gbs,
        busbw_threshold_gbs=(p.busbw_threshold_gbs if m.busbw_threshold_gbs is None
                             else m.busbw_threshold_gbs),
        resources=p.resources if m.resources is None else m.resources,
        warning=warning)


def profile_for(cloud: str, instance_type: str | None, inter_node: str = "auto",
                catalog: Any = None) -> FabricProfile:
    """The fabric profile for an instance, resolved for that instance family.

    `inter_node` "auto" takes the instance's fabric (from the catalog row when one is given,
    else from the table); an explicit fabric must be one the instance has, except "ethernet",
    which is always possible and carries a `warning` when it throws away an RDMA fabric.
    """
    instance_type = instance_type or ""
    cpu = _match(cloud, instance_type, "gloo")
    if cpu is not None:   # a CPU target (cloud: local): gloo whatever inter_node says
        return _resolve(cpu[0], cpu[1], instance_type or cloud)
    if inter_node not in ("auto", *clouds.selectable_fabrics()):
        raise PlanError(f"unknown interconnect.inter_node {inter_node!r}",
                        hint="one of auto, " + ", ".join(clouds.selectable_fabrics()))
    offer = catalog.instance(cloud, instance_type) if catalog is not None and instance_type else None
    natural = _match(cloud, instance_type)
    natural_fabric = offer.fabric if offer is not None else (natural[0].fabric if natural else None)
    # A catalog row that says "ethernet" (e.g. a small g5 without EFA) beats the family prefix.
    if natural is not None and natural_fabric != natural[0].fabric:
        natural = _match(cloud, instance_type, natural_fabric)
    # The catalog row's link (NVLink generation and bandwidth, or PCIe) decides the intra-node
    # figure (fabric/intra.py); a family's member figure only stands in for hardware the
    # table does not know.
    fact = of_offer(offer) if offer is not None else None
    intra = fact.busbw_gbs if fact is not None else (natural[1].intra_node_busbw_gbs if natural else None)

    wanted = natural_fabric if inter_node == "auto" else inter_node
    if wanted in (None, "ethernet"):
        eth = _by_name()["ethernet"]
        member = _match(cloud, instance_type, "ethernet")
        warning = None
        if natural_fabric not in (None, "ethernet"):
            warning = (f"inter_node: ethernet on {instance_type}, which has {natural_fabric}: "
                       f"NCCL will use plain TCP sockets, typically 10-100x slower")
        elif natural_fabric is None:
            warning = (f"no fabric profile for {cloud} {instance_type or '(no instance type)'}: "
                       f"assuming plain TCP (ethernet)")
        # Unknown boards get the PCIe floor: planning must not divide by zero.
        fallback = member[1] if member else Member("", PCIE_GEN4)
        return _resolve(eth, fallback, instance_type,
                        intra=intra if intra is not None else fallback.intra_node_busbw_gbs,
                        warning=warning, offer=offer)
    found = _match(cloud, instance_type, wanted)
    if found is None or (offer is not None and offer.fabric != wanted):
        has = natural_fabric or "no known fabric"
        raise PlanError(f"interconnect.inter_node is {wanted} but {cloud} {instance_type} has {has}",
                        hint="set inter_node: auto, or pick an instance type with that fabric")
    return _resolve(found[0], found[1], instance_type, intra=fact.busbw_gbs if fact is not None else None,
                    offer=offer)


def nccl_env(profile: FabricProfile, user_env: Mapping[str, str] | None = None,
             debug: str = "WARN") -> dict[str, str]:
    """Profile env + NCCL_DEBUG; the user's `nccl.env` wins over both.

    NCCL_ALGO is never added here: only a user who sets it gets it.
    """
    level = (debug or "WARN").upper()
    if level not in DEBUG_LEVELS:
        raise PlanError(f"nccl.debug must be WARN or INFO, not {debug!r}")
    env = {k: v for k, v in profile.env.items() if k != "NCCL_ALGO"}
    env["NCCL_DEBUG"] = level
    if level == "INFO":
        # INIT+NET is where the transport choice is printed; ENV echoes what was set.
        env["NCCL_DEBUG_SUBSYS"] = "INIT,NET,ENV"
    env.update({str(k): str(v) for k, v in (user_env or {}).items()})
    return dict(sorted(env.items()))


def gke_networks(profile: FabricProfile, cluster_name: str) -> list[dict[str, str]]:
    """The GKE multi-network entries: what the networking.gke.io/interfaces annotation lists
    and the names of the GKE Network objects the GCP stack must create (all but 'default')."""
    return [{"interfaceName": ifname, "network": tmpl.replace("{cluster}", cluster_name)}
            for ifname, tmpl in profile.gke_interfaces]


def single_node(profile: FabricProfile) -> FabricProfile:
    """The profile for a job that never leaves one node: NVLink/PCIe only, so no network
    devices, hugepages, NICs, sidecars or NCCL net settings that could block scheduling or
    make NCCL look for a plugin the pod does not mount. Bandwidth figures are kept."""
    return profile._replace(env=MappingProxyType({}), pod_env=MappingProxyType({}),
                            resources=MappingProxyType({}), hugepages=MappingProxyType({}),
                            capabilities=(), annotations=MappingProxyType({}), gke_interfaces=(),
                            device_annotation_container=None, extra_devices=(), sidecars=(),
                            init_containers=(), volumes=(), volume_mounts=(), exit_file=None,
                            ld_library_path=(), topology=None, transport=None, gpudirect=False,
                            env_script=None)


def ld_library_export(dirs: list[str] | tuple[str, ...]) -> str:
    """The shell line that prepends `dirs` to the image's LD_LIBRARY_PATH (kept, not replaced)."""
    joined = ":".join(dirs)
    return f'export LD_LIBRARY_PATH="{joined}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"'


def topology_config_map(cluster_name: str) -> str:
    return f"{cluster_name}-nccl-topo"


def __getattr__(name: str):
    # What a fabric adds to a pod (fabric/pods.py) loads on first use: `plan` needs none of it.
    if name in ("PodRequirements", "pod_requirements"):
        from reclaunch.fabric import pods

        return getattr(pods, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
