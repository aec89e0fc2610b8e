"""`reclaunch gc --cloud kubernetes --region CONTEXT`: our labelled objects on a cluster you
bring, in every namespace (reclaunch-managed=true, and reclaunch-cluster=<name> with --cluster).
Only objects reclaunch labels are listed; nodes and the cluster are never touched. A namespace
is listed only when it carries our labels, i.e. `up` created it."""

from __future__ import annotations

from reclaunch.providers.kubernetes.infra import API_VERSIONS, labelled
from reclaunch.runtime.sweep import Orphan, is_ours
from reclaunch.tags import CLUSTER_TAG, MANAGED_TAG

# Deletion order: the job first (its pods go with it), the namespace last.
_RANK = {"PyTorchJob": 0, "Job": 0, "Deployment": 1, "Service": 2, "ConfigMap": 3, "Secret": 3,
         "PersistentVolumeClaim": 4, "Namespace": 9}


class KubernetesSweeper:
    cloud = "kubernetes"

    def __init__(self, region: str, kube=None, **_options):
        from reclaunch.providers.kubernetes.connect import connect, context_name
        self.region = context_name(None if region in ("", "-", "current") else region)
        self.kube = kube or connect(self.region)

    def list(self, cluster: str | None = None) -> list[Orphan]:
        sel = f"{MANAGED_TAG}=true" + (f",{CLUSTER_TAG}={cluster}" if cluster else "")
        out = []
        for kind, o in labelled(self.kube, None, sel):
            md = o["metadata"]
            labels = dict(md.get("labels") or {})
            if not is_ours(labels, cluster):
                continue
            ns = md.get("namespace")
            out.append(Orphan(cloud=self.cloud, region=self.region, kind=kind,
                              id=f"{ns}/{md['name']}" if ns else md["name"], name=md["name"],
                              cluster=labels.get(CLUSTER_TAG, ""), rank=_RANK.get(kind, 5),
                              details={"namespace": ns}, tags=labels))
        return out

    def _get(self, o: Orphan):
        return self.kube.get(API_VERSIONS[o.kind], o.kind, o.name, o.details.get("namespace"))

    def tags(self, o: Orphan) -> dict[str, str] | None:
        obj = self._get(o)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return None
        return dict(obj["metadata"].get("labels") or {})

    def delete(self, o: Orphan) -> None:
        self.kube.delete(API_VERSIONS[o.kind], o.kind, o.name, o.details.get("namespace"))

    def exists(self, o: Orphan) -> bool:
        return self.tags(o) is not None
