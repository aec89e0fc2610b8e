"""Facts about targets the spec rules need; data, so nothing branches on a cloud name."""

from __future__ import annotations

from typing import Mapping

from reclaunch import clouds


# The storage kinds each target provides, by name (the records: each cloud's facts, `storage`;
# clouds.storage_kind(name) for one).
STORAGE_BY_CLOUD: Mapping[str, tuple[str, ...]] = clouds.PerCloud(
    lambda f: tuple(k.name for k in f.storage))


def storage_resource_hints() -> tuple[str, ...]:
    """Substrings of resource kinds that hold a job's data, over every storage kind."""
    return tuple(dict.fromkeys(h for k in clouds.storage_kinds().values() for h in k.resource_hints))


# What a cluster name must be on each target (clouds.DNS_1035 unless its facts say otherwise).
NAME_RULES: Mapping[str, tuple[str, str]] = clouds.PerCloud(lambda f: f.name_rule)


def own_cluster(cloud: str) -> bool:
    """A cluster the team already has (its facts' kind "own", cloud: kubernetes): no region,
    no stack; offers come from its nodes, and the vendors' fabric profiles apply by instance
    type whatever cloud runs the nodes."""
    return cloud in clouds.own_names()
# cloud: local runs one training process per simulated GPU on this machine's cores.
LOCAL_MAX_PROCESSES = 64
# Larger than any file system the stacks provision (FSx for Lustre, Azure Managed Lustre and
# Filestore top out in the low PiB); a typo like 999999EiB is stopped here, not at the cloud.
MAX_STORAGE_BYTES = 100 * 2**50


def runs_here(cloud: str) -> bool:
    """A target that runs on this machine: no catalog offer, no region, gloo over loopback."""
    return clouds.known(cloud) and clouds.get(cloud).runs_here
