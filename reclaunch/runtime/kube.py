"""Talking to the training cluster: server-side apply, PyTorchJob state, pods, nodes, logs.

Raw REST through the `kubernetes` client's ApiClient (auth, TLS, kubeconfig exec plugins), but
paths are built here from a small kind table so applying needs no discovery round-trips and
tests can serve recorded responses on 127.0.0.1. Objects come back as plain dicts.
`kubernetes` is imported only when a `Kube` is built.
"""

from __future__ import annotations

import json
from typing import Any, Iterator, NamedTuple

from reclaunch.errors import ProviderError, require
from reclaunch import clouds
from reclaunch.runtime.states import JOB_STATES, JobState  # noqa: F401  (one table)
from reclaunch.tags import CAPACITY_LABEL, JOB_NAME_LABEL, PYTORCHJOB_API

FIELD_MANAGER = "reclaunch"
JOB_LABEL = JOB_NAME_LABEL
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"




def capacity_labels() -> dict[str, dict[str, str]]:
    """Node label -> capacity type: each cloud's managed labels (its facts, capacity_labels),
    then ours, set by stacks/common.py (no cloud-name branching needed)."""
    out = {k: dict(v) for f in clouds.all_facts() for k, v in f.capacity_labels.items()}
    out[CAPACITY_LABEL] = {"spot": "spot", "on-demand": "on-demand"}
    return out

# kind -> (plural, namespaced). Anything else: lower-case kind + "s", namespaced.
KINDS: dict[str, tuple[str, bool]] = {
    "Namespace": ("namespaces", False), "Node": ("nodes", False),
    "PersistentVolume": ("persistentvolumes", False), "StorageClass": ("storageclasses", False),
    "ClusterRole": ("clusterroles", False), "ClusterRoleBinding": ("clusterrolebindings", False),
    "PriorityClass": ("priorityclasses", False),
    "CustomResourceDefinition": ("customresourcedefinitions", False),
    "ConfigMap": ("configmaps", True), "Secret": ("secrets", True), "Service": ("services", True),
    "PersistentVolumeClaim": ("persistentvolumeclaims", True), "Pod": ("pods", True),
    "ServiceAccount": ("serviceaccounts", True), "Job": ("jobs", True),
    "DaemonSet": ("daemonsets", True), "Deployment": ("deployments", True),
    "PyTorchJob": ("pytorchjobs", True), "MPIJob": ("mpijobs", True),
    "Role": ("roles", True), "RoleBinding": ("rolebindings", True),
}


def job_state(job: dict[str, Any] | None) -> str:
    """The JOB_STATES key for a PyTorchJob object (None: Missing)."""
    if job is None:
        return "Missing"
    conds = (job.get("status") or {}).get("conditions") or []
    true = [c for c in conds if str(c.get("status")) == "True" and c.get("type") in JOB_STATES]
    if true:
        # The operator keeps older conditions; the newest True one is the state.
        true.sort(key=lambda c: c.get("lastTransitionTime") or c.get("lastUpdateTime") or "")
        return true[-1]["type"]
    return "Created" if job.get("metadata", {}).get("name") else "Unknown"


def object_path(api_version: str, kind: str, name: str | None = None,
                namespace: str | None = None) -> str:
    base = "/api/" + api_version if "/" not in api_version else "/apis/" + api_version
    plural, namespaced = KINDS.get(kind, (kind.lower() + "s", True))
    path = base + (f"/namespaces/{namespace}" if namespaced and namespace else "") + f"/{plural}"
    return path + (f"/{name}" if name else "")


def capacity_type(labels: dict[str, str]) -> str:
    for key, values in capacity_labels().items():
        if key in labels:
            return values.get(labels[key], values.get(labels[key].lower(), "on-demand"))
    return "unknown"


class Kube:
    """A cluster connection. Build with `from_kubeconfig(text)` or `from_host(url)`."""

    def __init__(self, api_client: Any):
        self.api = api_client

    @classmethod
    def from_kubeconfig(cls, kubeconfig: str | dict) -> "Kube":
        k8s = require("kubernetes", "k8s")
        import yaml
        data = yaml.safe_load(kubeconfig) if isinstance(kubeconfig, str) else kubeconfig
        return cls(k8s.config.new_client_from_config_dict(data))

    @classmethod
    def from_host(cls, host: str, token: str | None = None) -> "Kube":
        k8s = require("kubernetes", "k8s")
        cfg = k8s.client.Configuration()
        cfg.host = host
        if token:
            cfg.api_key = {"authorization": token}
            cfg.api_key_prefix = {"authorization": "Bearer"}
        return cls(k8s.client.ApiClient(cfg))

    # ---- raw -----------------------------------------------------------------------------
    def _call(self, method: str, path: str, *, query: list[tuple[str, Any]] | None = None,
              body: Any = None, content_type: str | None = None, stream: bool = False,
              not_found_ok: bool = False, timeout: Any = None) -> Any:
        k8s = require("kubernetes", "k8s")
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        method_, url, hdrs, body_, post = self.api.param_serialize(
            method=method, resource_path=path, query_params=query or [], header_params=headers,
            body=body, auth_settings=["BearerToken"])
        try:
            resp = self.api.call_api(method_, url, header_params=hdrs, body=body_,
                                     post_params=post, _request_timeout=timeout)
        except k8s.client.ApiException as exc:
            if not_found_ok and exc.status == 404:
                return None
            raise ProviderError(f"kubernetes {method} {path}: {exc.status} {_reason(exc)}") from None
        except Exception as exc:  # urllib3 connection errors and the like
            raise ProviderError(f"kubernetes {method} {path}: {type(exc).__name__}: {exc}",
                                hint="is the cluster up? `reclaunch status`") from None
        if resp.status >= 400:
            data = resp.read()
            if not_found_ok and resp.status == 404:
                return None
            raise ProviderError(f"kubernetes {method} {path}: {resp.status} {_message(data)}")
        if stream:
            return resp.response
        data = resp.read()
        return json.loads(data) if data else {}

    # ---- objects -------------------------------------------------------------------------
    def apply(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """Server-side apply (field manager "reclaunch", force: we own these fields)."""
        md = manifest.get("metadata") or {}
        path = object_path(manifest["apiVersion"], manifest["kind"], md["name"], md.get("namespace"))
        return self._call("PATCH", path, body=manifest, content_type="application/apply-patch+yaml",
                          query=[("fieldManager", FIELD_MANAGER), ("force", "true")])

    def apply_all(self, manifests: list[dict[str, Any]]) -> list[str]:
        done = []
        for m in manifests:
            self.apply(m)
            ns = (m.get("metadata") or {}).get("namespace")
            done.append(f"{m['kind']}/{(ns + '/') if ns else ''}{m['metadata']['name']}")
        return done

    def get(self, api_version: str, kind: str, name: str,
            namespace: str | None = None) -> dict[str, Any] | None:
        return self._call("GET", object_path(api_version, kind, name, namespace), not_found_ok=True)

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> bool:
        """Delete (foreground, so pods go too); False when it was not there."""
        res = self._call("DELETE", object_path(api_version, kind, name, namespace),
                         body={"propagationPolicy": "Foreground"}, not_found_ok=True,
                         content_type="application/json")
        return res is not None

    def job(self, namespace: str, name: str, kind: str = "PyTorchJob",
            api_version: str = PYTORCHJOB_API) -> dict[str, Any] | None:
        return self.get(api_version, kind, name, namespace)

    def pods(self, namespace: str, job_name: str) -> list[dict[str, Any]]:
        data = self._call("GET", f"/api/v1/namespaces/{namespace}/pods",
                          query=[("labelSelector", f"{JOB_LABEL}={job_name}")])
        out = []
        for p in data.get("items", []):
            labels = p["metadata"].get("labels") or {}
            statuses = (p.get("status") or {}).get("containerStatuses") or []
            out.append({
                "name": p["metadata"]["name"],
                "rank": pod_rank(labels),
                "replica_type": labels.get(REPLICA_TYPE_LABEL, ""),
                "phase": (p.get("status") or {}).get("phase", "Unknown"),
                "restarts": sum(int(s.get("restartCount", 0)) for s in statuses),
                "node": (p.get("spec") or {}).get("nodeName"),
            })
        return sorted(out, key=lambda p: (p["rank"] is None, p["rank"] or 0, p["name"]))

    def nodes(self, label_selector: str | None = None) -> list[dict[str, Any]]:
        q = [("labelSelector", label_selector)] if label_selector else []
        data = self._call("GET", "/api/v1/nodes", query=q)
        out = []
        for n in data.get("items", []):
            labels = n["metadata"].get("labels") or {}
            conds = (n.get("status") or {}).get("conditions") or []
            out.append({
                "name": n["metadata"]["name"],
                "capacity_type": capacity_type(labels),
                "instance_type": labels.get("node.kubernetes.io/instance-type", ""),
                "zone": labels.get("topology.kubernetes.io/zone", ""),
                "ready": any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds),
            })
        return out

    def logs(self, namespace: str, pod: str, *, follow: bool = False,
             container: str | None = None, tail_lines: int | None = None) -> Iterator[str]:
        q: list[tuple[str, Any]] = [("follow", "true" if follow else "false")]
        if container:
            q.append(("container", container))
        if tail_lines is not None:
            q.append(("tailLines", tail_lines))
        resp = self._call("GET", f"/api/v1/namespaces/{namespace}/pods/{pod}/log", query=q,
                          stream=True, timeout=None if follow else 60)
        buf = b""
        try:
            for chunk in resp.stream(4096, decode_content=True):
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for ln in lines:
                    yield ln.decode(errors="replace")
            if buf:
                yield buf.decode(errors="replace")
        finally:
            resp.release_conn()


def pod_rank(labels: dict[str, str]) -> int | None:
    """Node rank of a PyTorchJob pod: master is 0, worker i is i + 1."""
    rtype = labels.get(REPLICA_TYPE_LABEL, "").lower()
    try:
        idx = int(labels.get(REPLICA_INDEX_LABEL, ""))
    except ValueError:
        return None
    return idx if rtype == "master" else idx + 1 if rtype == "worker" else None


def _message(data: bytes | None) -> str:
    try:
        body = json.loads(data or b"{}")
        return body.get("message") or (body.get("error") or {}).get("message") or ""
    except Exception:
        return (data or b"")[:200].decode(errors="replace")


def _reason(exc: Any) -> str:
    try:
        return json.loads(exc.body).get("message") or exc.reason
    except Exception:
        return str(exc.reason)
