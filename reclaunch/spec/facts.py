"""Facts about targets the spec rules need; data, so nothing branches on a cloud name."""

from __future__ import annotations

from typing import Mapping, NamedTuple

from reclaunch import clouds


class StorageFacts(NamedTuple):
    sized: bool                  # capacity must be given (the rest are elastic or already exist)
    created_by_stack: bool       # the Pulumi stack creates the file system and binds `<name>-data`
    # Substrings of the cloud resource kinds / Pulumi types that hold the data: `down
    # --keep-storage` keeps them, and teardown verification does not count them as leftovers.
    resource_hints: tuple[str, ...] = ()
    mounted: bool = True         # pods mount it (a bucket is reached through fsspec, not a volume)


# The one table of storage kinds (spec rules, render, keep-storage and sweep all read it).
# Which target provides which is each cloud's facts (`storage`, reclaunch/providers/*/facts.py).
STORAGE_KINDS: dict[str, StorageFacts] = {
    "fsx-lustre": StorageFacts(True, True, ("fsx", "file_system", "filesystem")),
    "efs": StorageFacts(False, True, ("efs", "file_system", "filesystem")),
    "azure-lustre": StorageFacts(True, True, ("lustre", "amlfilesystem")),
    "azure-files": StorageFacts(True, True, ("storageaccount", "fileshare", "share")),
    "filestore": StorageFacts(True, True, ("filestore",)),
    "cephfs": StorageFacts(False, False, ()),
    "pvc": StorageFacts(True, False,
                        ("persistentvolume", "volume", "/disk:disk", "compute/disk", "disk")),
    "hostpath": StorageFacts(False, False, ()),
    # An object-store bucket for checkpoints (job.checkpoint.path: s3:// gs:// az://): the stack
    # creates it (cloud: local creates it at AWS_ENDPOINT_URL); no volume, no mount.
    "bucket": StorageFacts(False, False, ("bucket", "blobcontainer", "storageaccount"), mounted=False),
    "none": StorageFacts(False, False, ()),
}

STORAGE_BY_CLOUD: Mapping[str, tuple[str, ...]] = clouds.PerCloud(lambda f: f.storage)
SIZED_STORAGE = tuple(k for k, f in STORAGE_KINDS.items() if f.sized)
STACK_PROVISIONED = tuple(k for k, f in STORAGE_KINDS.items() if f.created_by_stack)
MOUNTED_STORAGE = tuple(k for k, f in STORAGE_KINDS.items() if f.mounted and k != "none")
STORAGE_RESOURCE_HINTS = tuple(dict.fromkeys(h for f in STORAGE_KINDS.values() for h in f.resource_hints))

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
