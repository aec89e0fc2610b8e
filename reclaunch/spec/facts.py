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
