"""Talking to the training cluster: server-side apply, PyTorchJob state, pods, nodes, logs.

Raw REST through the `kubernetes` client's ApiClient (auth, TLS, kubeconfig exec plugins), but
paths are built here from a small kind table so applying needs no discovery round-trips and
tests can serve recorded responses on 127.0.0.1. Objects come back as plain dicts.
`kubernetes` is imported only when a `Kube` is built.
"""

from __future__ import annotations

import json
import time
from typing import Any, Iterator, NamedTuple

from reclaunch.errors import ProviderError, require
from reclaunch import clouds
from reclaunch.runtime.deadline import call_deadline, endpoint, sdk_limits, within
from reclaunch.runtime.states import JOB_STATES, JobState  # noqa: F401  (one table)
from reclaunch.tags import CAPACITY_LABEL, JOB_NAME_LABEL, PYTORCHJOB_API

FIELD_MANAGER = "reclaunch"
JOB_LABEL = JOB_NAME_LABEL
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
# One answer is at most this big (a list page of LIST_PAGE objects is far smaller); a list is at
# most MAX_PAGES pages: what a cluster, or something lying as one, can make us hold.
MAX_ANSWER = 32 * 2**20
LIST_PAGE = 500
MAX_PAGES = 1000
MAX_LINE = 2**20   # a log line's bytes held before it is shown (the CLI cuts lines shorter)


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
    st = job.get("status") if isinstance(job.get("status"), dict) else {}
    conds = st.get("conditions") if isinstance(st.get("conditions"), list) else []
    true = [c for c in conds if isinstance(c, dict) and str(c.get("status")) == "True"
            and c.get("type") in JOB_STATES]
    if true:
        # The operator keeps older conditions; the newest True one is the state.
        true.sort(key=lambda c: str(c.get("lastTransitionTime") or c.get("lastUpdateTime") or ""))
        return true[-1]["type"]
    md = job.get("metadata")
    return "Created" if isinstance(md, dict) and md.get("name") else "Unknown"


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
              not_found_ok: bool = False, follow: bool = False) -> Any:
        """One API call: connect and read timeouts (runtime/deadline.py), a total deadline on the
        whole answer (the read timeout restarts with every byte), an answer of at most
        MAX_ANSWER bytes, and an answer that is not JSON is one ProviderError, never a
        traceback. stream: the response once its headers are in (`follow`: a log that may be
        silent for long gets no read timeout)."""
        k8s = require("kubernetes", "k8s")
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        method_, url, hdrs, body_, post = self.api.param_serialize(
            method=method, resource_path=path, query_params=query or [], header_params=headers,
            body=body, auth_settings=["BearerToken"])
        what = f"kubernetes {method} {path}"
        connect, read, _ = sdk_limits()

        def send() -> tuple[Any, bytes | None]:
            resp = self.api.call_api(method_, url, header_params=hdrs, body=body_, post_params=post,
                                     _request_timeout=(connect, None if follow else read))
            return resp, None if stream and resp.status < 400 else _read_at_most(resp.response, what)
        try:
            resp, data = within(send, what, key=endpoint(self.api.configuration.host))
        except ProviderError:
            raise
        except k8s.client.ApiException as exc:
            if not_found_ok and exc.status == 404:
                return None
            raise ProviderError(f"{what}: {exc.status} {_reason(exc)}") from None
        except Exception as exc:  # urllib3 connection errors and the like
            raise ProviderError(f"{what}: {type(exc).__name__}: {exc}",
                                hint="is the cluster up? `reclaunch status`") from None
        if resp.status >= 400:
            if not_found_ok and resp.status == 404:
                return None
            raise ProviderError(f"{what}: {resp.status} {_message(data)}")
        if stream:
            return resp.response
        try:
            return json.loads(data) if data else {}
        except (ValueError, RecursionError) as exc:   # not UTF-8, not JSON, nested 100k deep
            raise ProviderError(f"{what}: the answer is not JSON ({type(exc).__name__})") from None

    def items(self, path: str, query: list[tuple[str, Any]] | None = None, *,
             not_found_ok: bool = False) -> list[dict[str, Any]]:
        """Every item of a list, LIST_PAGE at a time (the API's limit/continue chunking), at
        most MAX_PAGES pages; items that are not objects are dropped."""
        items: list[dict[str, Any]] = []
        token = None
        for _ in range(MAX_PAGES):
            q = [*(query or []), ("limit", LIST_PAGE)] + ([("continue", token)] if token else [])
            data = self._call("GET", path, query=q, not_found_ok=not_found_ok)
            if data is None:
                return items
            page = data.get("items") if isinstance(data, dict) else None
            if not isinstance(page, list):
                raise ProviderError(f"kubernetes GET {path}: the answer is not a list")
            items += [i for i in page if isinstance(i, dict) and isinstance(i.get("metadata"), dict)]
            token = data["metadata"].get("continue") if isinstance(data.get("metadata"), dict) else None
            if not token or not isinstance(token, str):
                return items
        raise ProviderError(f"kubernetes GET {path}: more than {MAX_PAGES} pages of {LIST_PAGE}")

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
        path = object_path(api_version, kind, name, namespace)
        obj = self._call("GET", path, not_found_ok=True)
        if obj is not None and not isinstance(obj, dict):
            raise ProviderError(f"kubernetes GET {path}: the answer is not an object")
        return obj

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
        out = []
        for p in unique(self.items(f"/api/v1/namespaces/{namespace}/pods",
                                  [("labelSelector", f"{JOB_LABEL}={job_name}")])):
            labels = string_map(p["metadata"].get("labels"))
            st = p.get("status") if isinstance(p.get("status"), dict) else {}
            statuses = st.get("containerStatuses") if isinstance(st.get("containerStatuses"), list) else []
            out.append({
                "name": p["metadata"]["name"],
                "rank": pod_rank(labels),
                "replica_type": labels.get(REPLICA_TYPE_LABEL, ""),
                "phase": str(st.get("phase", "Unknown"))[:40],
                "restarts": sum(_count(s.get("restartCount")) for s in statuses if isinstance(s, dict)),
                "node": p["spec"].get("nodeName") if isinstance(p.get("spec"), dict) else None,
            })
        return sorted(out, key=lambda p: (p["rank"] is None, p["rank"] or 0, p["name"]))

    def nodes(self, label_selector: str | None = None) -> list[dict[str, Any]]:
        q = [("labelSelector", label_selector)] if label_selector else []
        out = []
        for n in unique(self.items("/api/v1/nodes", q)):
            labels = string_map(n["metadata"].get("labels"))
            st = n.get("status") if isinstance(n.get("status"), dict) else {}
            conds = st.get("conditions") if isinstance(st.get("conditions"), list) else []
            out.append({
                "name": n["metadata"]["name"],
                "capacity_type": capacity_type(labels),
                "instance_type": labels.get("node.kubernetes.io/instance-type", ""),
                "zone": labels.get("topology.kubernetes.io/zone", ""),
                "ready": any(isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True"
                             for c in conds),
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
                          stream=True, follow=follow)
        # Without -f the log ends: a total deadline on reading it, checked between reads that
        # return what has arrived (read1), so a trickle cannot stretch it.
        end = None if follow else time.monotonic() + call_deadline()
        buf = b""
        try:
            while chunk := resp.read1(65536):
                if end is not None and time.monotonic() > end:
                    raise ProviderError(f"kubernetes log of {namespace}/{pod}: not complete within "
                                        f"{call_deadline():g} s", hint="`reclaunch logs -f` follows it")
                buf += chunk
                *lines, buf = buf.split(b"\n")
                if len(buf) > MAX_LINE:   # a line with no end: shown in pieces, memory bounded
                    lines, buf = [*lines, buf], b""
                for ln in lines:
                    yield ln.decode(errors="replace")
            if buf:
                yield buf.decode(errors="replace")
        finally:
            resp.release_conn()


def unique(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One object per name (and namespace): an API that lists one node 5000 times has one node."""
    seen, out = set(), []
    for o in items:
        md = o["metadata"]
        key = (md.get("namespace"), md.get("name"))
        if isinstance(key[1], str) and key[1] and key not in seen:
            seen.add(key)
            out.append(o)
    return out


def string_map(v: Any) -> dict[str, str]:
    """A label or annotation map as the API promises it (str -> str); anything else dropped."""
    return {k: x for k, x in v.items() if isinstance(k, str) and isinstance(x, str)} \
        if isinstance(v, dict) else {}


def _count(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 10**9 else 0


def _read_at_most(raw: Any, what: str) -> bytes:
    """The whole body, or ProviderError once it passes MAX_ANSWER (the connection is dropped)."""
    data = bytearray()
    while chunk := raw.read(1 << 16):
        data += chunk
        if len(data) > MAX_ANSWER:
            raw.close()
            raise ProviderError(f"{what}: the answer is over {MAX_ANSWER >> 20} MiB")
    raw.release_conn()
    return bytes(data)


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
