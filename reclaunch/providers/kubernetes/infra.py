"""The lifecycle's `Infra` for a cluster you bring: nothing to provision, nothing to destroy
but what `up` applied. `up` -> the namespace and the objects of the launch; `down` -> those
objects again (the namespace only when `up` created it), never a node or the cluster.

What was applied is kept in ~/.reclaunch/kubernetes/<name>.json (0600) by the recording
`Kube` below, so teardown deletes exactly that list, newest first.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable

from reclaunch.errors import ProviderError
from reclaunch.runtime.infra import Infra
from reclaunch.runtime.kube import Kube
from reclaunch.tags import CLUSTER_TAG, PYTORCHJOB_API

# apiVersion of every kind the launch renders (manifests/job.py, rdzv.py, preflight.py).
API_VERSIONS = {"Namespace": "v1", "ConfigMap": "v1", "Secret": "v1", "Service": "v1",
                "PersistentVolumeClaim": "v1", "Deployment": "apps/v1", "Job": "batch/v1",
                "PyTorchJob": PYTORCHJOB_API}
# Kinds listed when verifying a teardown and by `gc` (namespaced; Namespace apart).
SWEPT = ("PyTorchJob", "Job", "Deployment", "Service", "ConfigMap", "Secret",
         "PersistentVolumeClaim")


def state_path(name: str):
    from reclaunch.home import reclaunch_home
    d = reclaunch_home() / "kubernetes"
    d.mkdir(mode=0o700, exist_ok=True)
    return d / f"{name}.json"


def read_state(name: str) -> dict[str, Any] | None:
    from reclaunch.home import DamagedState, read_state_file, root
    p = root() / "kubernetes" / f"{name}.json"
    try:   # bounded and non-blocking: a FIFO or a link to /dev/zero is damage, not a hang
        raw = read_state_file(p, 16 * 2**20)
        data = None if raw is None else json.loads(raw)
    except (DamagedState, ValueError, RecursionError) as exc:
        why = exc.message if isinstance(exc, DamagedState) else f"{p}: unreadable state ({exc})"
        raise ProviderError(why, hint=f"`reclaunch gc --cloud kubernetes --cluster {name}` finds "
                            "what is labelled for it") from None
    return data if isinstance(data, dict) else None


def write_state(name: str, data: dict[str, Any]) -> None:
    p = state_path(name)
    tmp = p.with_suffix(".tmp")
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as fh:
        json.dump(data, fh, indent=1)
    os.replace(tmp, p)


class RecordingKube(Kube):
    """A Kube that writes every object it applies into the cluster's state first."""

    def __init__(self, api_client: Any, name: str):
        super().__init__(api_client)
        self.cluster = name

    def apply(self, manifest: dict[str, Any]) -> dict[str, Any]:
        md = manifest.get("metadata") or {}
        ref = [manifest["apiVersion"], manifest["kind"], md["name"], md.get("namespace")]
        state = read_state(self.cluster) or {}
        applied = state.setdefault("applied", [])
        if ref not in applied:
            applied.append(ref)
            write_state(self.cluster, state)
        return super().apply(manifest)


class OwnClusterInfra(Infra):
    """Infra of `cloud: kubernetes`. `connect(context)` -> Kube (tests pass a stand-in's)."""

    def __init__(self, connect: Callable[[str | None], Kube]):
        self.connect = connect

    def check(self) -> None:   # the kubeconfig and operator are checked by the provider
        return None

    def exists(self, name: str) -> bool:
        state = read_state(name)
        return state is not None and not state.get("destroyed")

    def up(self, plan, on_event=None) -> dict[str, Any]:
        context, ns = plan.region, plan.spec.namespace
        old = read_state(plan.name) or {}
        if old.get("context") == context and not old.get("destroyed"):   # a resumed `up`
            return old
        kube = self.connect(context)
        existed = kube.get("v1", "Namespace", ns) is not None
        state = {"name": plan.name, "context": context, "namespace": ns, "namespace_created": not existed,
                 "applied": []}
        write_state(plan.name, state)
        return state

    def outputs(self, name: str) -> dict[str, Any]:
        state = read_state(name)
        if state is None:
            raise ProviderError(f"{name}: nothing was applied to a cluster",
                                hint=f"`reclaunch up` it first")
        return state

    def destroy(self, name: str, *, keep_storage: bool = False, on_event=None) -> None:
        state = read_state(name)
        if state is None:
            return
        kube = self.connect(state.get("context"))
        keep = []
        for api, kind, obj, ns in reversed(state.get("applied") or []):
            if kind == "Namespace" and not state.get("namespace_created"):
                continue   # the team's namespace: never ours to delete
            if keep_storage and kind == "PersistentVolumeClaim":
                keep.append([api, kind, obj, ns])
                continue
            kube.delete(api, kind, obj, ns)
            if on_event:
                on_event({"kind": "resource", "status": "done", "op": "deleted", "type": kind,
                          "urn": f"{ns + '/' if ns else ''}{obj}"})
        # Kept (marked destroyed) so the verification knows whose namespace it was.
        write_state(name, {**state, "applied": keep, "destroyed": True})

    def pending(self, name: str) -> list[dict[str, Any]]:
        return []

    def clear_pending(self, name: str) -> list[dict[str, Any]]:
        return []


def labelled(kube: Kube, namespace: str | None, selector: str) -> list[tuple[str, dict]]:
    """(kind, object) of every object of SWEPT kinds matching `selector` (None: all namespaces)."""
    from reclaunch.runtime.kube import object_path
    out = []
    for kind in SWEPT:
        path = object_path(API_VERSIONS[kind], kind, None, namespace)
        out += [(kind, o) for o in kube.items(path, [("labelSelector", selector)], not_found_ok=True)]
    out += [("Namespace", o) for o in kube.items("/api/v1/namespaces", [("labelSelector", selector)])
            if namespace is None or o["metadata"].get("name") == namespace]
    return out


def leftovers(kube: Kube, name: str, namespace: str, keep_storage: bool,
              namespace_created: bool) -> list[str]:
    """What is still labelled for this cluster in its namespace (teardown verification)."""
    out = []
    for kind, o in labelled(kube, namespace, f"{CLUSTER_TAG}={name}"):
        if kind == "Namespace" and not namespace_created:
            continue
        if keep_storage and kind == "PersistentVolumeClaim":
            continue
        if (o["metadata"].get("deletionTimestamp")):
            continue   # being deleted (foreground: its pods go first)
        out.append(f"{kind} {namespace}/{o['metadata']['name']}")
    return out
