"""`render --with-storage`: the PV + PVC `<name>-data` for a file system that already exists,
for a cluster the user already has (`up` creates both with the file system; render alone
does not). `storage.existing` names the file system, one form per kind (STATIC below).

Static provisioning as each driver documents it:
- efs: github.com/kubernetes-sigs/aws-efs-csi-driver examples/kubernetes/static_provisioning
  (driver efs.csi.aws.com, volumeHandle = file system id)
- fsx-lustre: github.com/kubernetes-sigs/aws-fsx-csi-driver examples/kubernetes/static_provisioning
  (fsx.csi.aws.com, volumeHandle = fs id, volumeAttributes dnsname and mountname)
- azure-lustre: github.com/kubernetes-sigs/azurelustre-csi-driver docs/static-provisioning
  (azurelustre.csi.azure.com, volumeAttributes mgs-ip-address, fs-name "lustrefs")
- filestore, azure-files (NFS): the in-tree `nfs` volume (kubernetes.io/docs/concepts/storage/volumes/#nfs)
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from reclaunch.errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

# kind -> (form of storage.existing, example)
STATIC: dict[str, tuple[str, str]] = {
    "efs": ("<file system id>", "fs-0123456789abcdef0"),
    "fsx-lustre": ("<file system id>/<mount name>", "fs-0123456789abcdef0/abcdef12"),
    "azure-lustre": ("<MGS IP address>", "10.0.4.5"),
    "filestore": ("<instance IP>/<share>", "10.0.0.2/data"),
    "azure-files": ("<storage account>/<share>", "mystorageacct/data"),
}


def _source(plan: "Plan", kind: str, existing: str) -> dict[str, Any]:
    if kind == "efs":
        return {"csi": {"driver": "efs.csi.aws.com", "volumeHandle": existing}}
    if kind == "fsx-lustre":
        fs, mount = existing.split("/", 1)
        return {"csi": {"driver": "fsx.csi.aws.com", "volumeHandle": fs, "volumeAttributes": {
            "dnsname": f"{fs}.fsx.{plan.region}.amazonaws.com", "mountname": mount}}}
    if kind == "azure-lustre":
        return {"csi": {"driver": "azurelustre.csi.azure.com", "volumeHandle": f"{plan.name}-lustre",
                        "volumeAttributes": {"mgs-ip-address": existing, "fs-name": "lustrefs"}}}
    if kind == "filestore":
        ip, share = existing.split("/", 1)
        return {"nfs": {"server": ip, "path": f"/{share}"}}
    account, share = existing.split("/", 1)   # azure-files, NFS protocol
    return {"nfs": {"server": f"{account}.file.core.windows.net", "path": f"/{account}/{share}"}}


def static_volume(plan: "Plan", meta) -> list[dict[str, Any]]:
    """[PersistentVolume, PersistentVolumeClaim] named `<name>-data`. UsageError (exit 2)
    naming the form storage.existing takes when it is missing or malformed."""
    st = plan.spec.storage
    if st.kind not in STATIC:
        return []
    form, example = STATIC[st.kind]
    existing = (st.existing or "").strip()
    if not existing or (("/" in form) != ("/" in existing)) or existing.startswith("/"):
        raise UsageError(f"{plan.spec.where('storage', 'existing')}: render --with-storage needs "
                         f"storage.existing: {form} of your {st.kind} (e.g. {example})")
    name = f"{plan.name}-data"
    gib = math.ceil((st.size or 2**40) / 2**30)
    pv_meta = {k: v for k, v in meta(plan, name, namespaced=False).items()}
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": pv_meta,
          "spec": {"capacity": {"storage": f"{gib}Gi"}, "accessModes": ["ReadWriteMany"],
                   "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                   **_source(plan, st.kind, existing)}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta(plan, name),
           "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "", "volumeName": name,
                    "resources": {"requests": {"storage": f"{gib}Gi"}}}}
    return [pv, pvc]
