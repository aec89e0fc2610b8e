"""Facts about targets the spec rules need; data, so nothing branches on a cloud name."""

from __future__ import annotations

# Which storage kinds each target can provision; data, so no branching on the cloud name.
STORAGE_BY_CLOUD: dict[str, tuple[str, ...]] = {
    "aws": ("fsx-lustre", "efs", "cephfs", "pvc", "none"),
    "azure": ("azure-lustre", "azure-files", "cephfs", "pvc", "none"),
    "gcp": ("filestore", "cephfs", "pvc", "none"),
    "local": ("hostpath", "none"),
}
# Targets that run on this machine: no catalog offer, no region, gloo over loopback.
RUNS_HERE: tuple[str, ...] = ("local",)
# Kinds whose capacity must be given (the rest are elastic or already exist).
SIZED_STORAGE = ("fsx-lustre", "azure-lustre", "azure-files", "filestore", "pvc")

# What a cluster name must be on each target: it names the stack, tags, the namespace and the
# PyTorchJob, whose per-replica Services must be DNS-1035 labels (start with a letter:
# kubernetes.io/docs/concepts/overview/working-with-objects/names), as must GCP resource names
# (cloud.google.com/compute/docs/naming-resources: [a-z]([-a-z0-9]*[a-z0-9])?). cloud: local
# takes the same rule: it is the rehearsal for a cloud, and its name must survive the move.
_DNS_1035 = (r"[a-z]([-a-z0-9]*[a-z0-9])?",
             "must start with a letter and end with a letter or digit (a DNS-1035 label: "
             "Kubernetes Service and GCP resource names are made from it)")
NAME_RULES: dict[str, tuple[str, str]] = {
    "aws": _DNS_1035, "azure": _DNS_1035, "gcp": _DNS_1035, "local": _DNS_1035}
# cloud: local runs one training process per simulated GPU on this machine's cores.
LOCAL_MAX_PROCESSES = 64
# Larger than any file system the stacks provision (FSx for Lustre, Azure Managed Lustre and
# Filestore top out in the low PiB); a typo like 999999EiB is stopped here, not at the cloud.
MAX_STORAGE_BYTES = 100 * 2**50
