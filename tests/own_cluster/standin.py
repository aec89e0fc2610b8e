"""A Kubernetes API stand-in on 127.0.0.1 for `cloud: kubernetes` tests.

Serves a recorded cluster (tests/fixtures/recorded/kubernetes/<name>.json: its NodeList, the
pods already running, the PyTorchJob CRD) and keeps what clients apply: a server-side apply
(PATCH application/apply-patch+yaml) stores the object, GET returns it, a list filters it by
labelSelector, DELETE removes it. Every request is recorded (RecordedServer), so a test can
assert exactly what `up` applied and `down` deleted.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from recorded_server import RecordedServer, Request  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "recorded" / "kubernetes"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/pytorchjobs.kubeflow.org"


def _matches(labels: dict, selector: str | None) -> bool:
    for term in filter(None, (selector or "").split(",")):
        k, _, v = term.partition("=")
        if labels.get(k) != v:
            return False
    return True


class KubeStandIn(RecordedServer):
    def __init__(self, cluster: str, *, operator: bool = True, job_outcome: str | None = None):
        """job_outcome: a PyTorchJob applied here gets this condition at once (the operator
        running it to the end), e.g. "Succeeded"."""
        super().__init__()
        self.job_outcome = job_outcome
        data = json.loads((FIXTURES / f"{cluster}.json").read_text())
        self.add("GET", "/api/v1/nodes", body=data["nodes"])
        self.add("GET", "/api/v1/pods", body=data["pods"])
        if operator:
            self.add("GET", CRD_PATH, body=data["crd"])
        self.objects: dict[str, dict] = {}   # path -> object
        # Namespaces the cluster already has (the team's own, not ours to delete).
        self.objects["/api/v1/namespaces/ml-team"] = {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml-team"}}

    def _dispatch(self, method, raw_path, headers, body):
        parts = urlsplit(raw_path)
        path, query = parts.path, dict(parse_qsl(parts.query, keep_blank_values=True))
        if path in ("/api/v1/nodes", "/api/v1/pods", CRD_PATH):
            return super()._dispatch(method, raw_path, headers, body)
        with self._lock:
            self.requests.append(Request(method, path, query, headers, body))
            if method == "PATCH":
                obj = json.loads(body)
                if obj.get("kind") == "PyTorchJob" and self.job_outcome:
                    obj["status"] = {"conditions": [
                        {"type": "Created", "status": "True", "lastTransitionTime": "2026-12-01T00:00:00Z"},
                        {"type": self.job_outcome, "status": "True",
                         "lastTransitionTime": "2026-12-01T00:10:00Z"}]}
                self.objects[path] = obj
                return 200, {}, obj
            if method == "DELETE":
                gone = self.objects.pop(path, None)
                return (200, {}, {"status": "Success"}) if gone else (404, {}, {"message": "not found"})
            if method == "GET" and path in self.objects:
                return 200, {}, self.objects[path]
            if method == "GET":   # a list: objects whose path is <path>/<name>
                items = [o for p, o in self.objects.items() if _in_list(p, path)]
                items = [o for o in items
                         if _matches((o.get("metadata") or {}).get("labels") or {},
                                     query.get("labelSelector"))]
                if items or _is_list(path):
                    return 200, {}, {"items": items}
            return 404, {}, {"message": f"{path} not found"}

    def applied(self) -> list[str]:
        return [r.path for r in self.calls("PATCH")]


def _in_list(obj_path: str, list_path: str) -> bool:
    """Is the object at obj_path an item of the list at list_path (namespaced or not)?"""
    parent = obj_path.rsplit("/", 1)[0]
    if parent == list_path:
        return True
    prefix, _, plural = list_path.rpartition("/")   # all namespaces: <prefix>/namespaces/*/<plural>
    bits = parent[len(prefix):].strip("/").split("/") if parent.startswith(prefix + "/namespaces/") else []
    return len(bits) == 3 and bits[0] == "namespaces" and bits[2] == plural


def _is_list(path: str) -> bool:
    return path.rsplit("/", 1)[1] in {"pytorchjobs", "jobs", "deployments", "services", "configmaps",
                                      "secrets", "persistentvolumeclaims", "namespaces", "pods"}


def kubeconfig(tmp_path: Path, url: str, context: str = "onprem") -> Path:
    """A kubeconfig whose `context` points at the stand-in (a bearer token, plain http)."""
    import yaml
    cfg = {"apiVersion": "v1", "kind": "Config", "current-context": context,
           "clusters": [{"name": context, "cluster": {"server": url}}],
           "users": [{"name": "ci", "user": {"token": "t0ken"}}],
           "contexts": [{"name": context, "context": {"cluster": context, "user": "ci"}}]}
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(cfg))
    return path
