"""Facts about targets the spec rules need; data, so nothing branches on a cloud name."""

from __future__ import annotations

from typing import NamedTuple


class StorageFacts(NamedTuple):
    clouds: tuple[str, ...]      # targets that can provide it
    sized: bool                  # capacity must be given (the rest are elastic or already exist)
    created_by_stack: bool       # the Pulumi stack creates the file system and binds `<name>-data`
    # Substrings of the cloud resource kinds / Pulumi types that hold the data: `down
    # --keep-storage` keeps them, and teardown verification does not count them as leftovers.
    resource_hints: tuple[str, ...] = ()


# The one table of storage kinds (spec rules, render, keep-storage and sweep all read it).
STORAGE_KINDS: dict[str, StorageFacts] = {
    "fsx-lustre": StorageFacts(("aws",), True, True, ("fsx", "file_system", "filesystem")),
    "efs": StorageFacts(("aws",), False, True, ("efs", "file_system", "filesystem")),
    "azure-lustre": StorageFacts(("azure",), True, True, ("lustre", "amlfilesystem")),
    "azure-files": StorageFacts(("azure",), True, True, ("storageaccount", "fileshare", "share")),
    "filestore": StorageFacts(("gcp",), True, True, ("filestore",)),
    "cephfs": StorageFacts(("aws", "azure", "gcp", "kubernetes"), False, False, ()),
    "pvc": StorageFacts(("aws", "azure", "gcp", "kubernetes"), True, False,
                       ("persistentvolume", "volume", "/disk:disk", "compute/disk", "disk")),
    "hostpath": StorageFacts(("local",), False, False, ()),
    "none": StorageFacts(("aws", "azure", "gcp", "kubernetes", "local"), False, False, ()),
}

STORAGE_BY_CLOUD: dict[str, tuple[str, ...]] = {
    cloud: tuple(k for k, f in STORAGE_KINDS.items() if cloud in f.clouds)
    for cloud in ("aws", "azure", "gcp", "kubernetes", "local")
}
SIZED_STORAGE = tuple(k for k, f in STORAGE_KINDS.items() if f.sized)
STACK_PROVISIONED = tuple(k for k, f in STORAGE_KINDS.items() if f.created_by_stack)
STORAGE_RESOURCE_HINTS = tuple(dict.fromkeys(h for f in STORAGE_KINDS.values() for h in f.resource_hints))

# Targets that run on this machine: no catalog offer, no region, gloo over loopback.
RUNS_HERE: tuple[str, ...] = ("local",)
# Targets that are a cluster the team already has (cloud: kubernetes): no region, no stack;
# offers come from its nodes (reclaunch/providers/kubernetes), and the vendors' fabric
# profiles apply by instance type whatever cloud runs the nodes.
OWN_CLUSTER: tuple[str, ...] = ("kubernetes",)
# What a cluster name must be on each target: it names the stack, tags, the namespace and the
# PyTorchJob, whose per-replica Services must be DNS-1035 labels (start with a letter:
# kubernetes.io/docs/concepts/overview/working-with-objects/names), as must GCP resource names
# (cloud.google.com/compute/docs/naming-resources: [a-z]([-a-z0-9]*[a-z0-9])?). cloud: local
# takes the same rule: it is the rehearsal for a cloud, and its name must survive the move.
_DNS_1035 = (r"[a-z]([-a-z0-9]*[a-z0-9])?",
             "must start with a letter and end with a letter or digit (a DNS-1035 label: "
             "Kubernetes Service and GCP resource names are made from it)")
NAME_RULES: dict[str, tuple[str, str]] = {
    "aws": _DNS_1035, "azure": _DNS_1035, "gcp": _DNS_1035, "kubernetes": _DNS_1035,
    "local": _DNS_1035}
# cloud: local runs one training process per simulated GPU on this machine's cores.
LOCAL_MAX_PROCESSES = 64
# Larger than any file system the stacks provision (FSx for Lustre, Azure Managed Lustre and
# Filestore top out in the low PiB); a typo like 999999EiB is stopped here, not at the cloud.
MAX_STORAGE_BYTES = 100 * 2**50
