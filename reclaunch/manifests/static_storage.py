"""`render --with-storage`: the PV + PVC `<name>-data` for a file system that already exists,
for a cluster the user already has (`up` creates both with the file system; render alone
does not). `storage.existing` names the file system, one form per kind, and the PV's volume
source is the kind's own (its record's `existing`, in its cloud's facts, each from the
static-provisioning docs of its CSI driver or the in-tree `nfs` volume).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from reclaunch import clouds
from reclaunch.errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan


def static_volume(plan: "Plan", meta) -> list[dict[str, Any]]:
    """[PersistentVolume, PersistentVolumeClaim] named `<name>-data`. UsageError (exit 2)
    naming the form storage.existing takes when it is missing or malformed."""
    st = plan.spec.storage
    known = clouds.storage_kind(st.kind).existing
    if known is None or known.volume is None:
        return []
    form, example = known.form, known.example
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
                   **known.volume(plan, existing)}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta(plan, name),
           "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "", "volumeName": name,
                    "resources": {"requests": {"storage": f"{gib}Gi"}}}}
    return [pv, pvc]
