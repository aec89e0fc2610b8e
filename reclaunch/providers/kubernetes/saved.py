"""`reclaunch nodes save`: a cluster's nodes, and what its pods already request, as a file, so
`plan`, `render` and `check` work where there is no kubeconfig (a laptop, CI, a colleague's
machine): `kubernetes.nodes: FILE` in the spec, or $RECLAUNCH_HOME/kubernetes/nodes/<context>.json,
found by the spec's context. Only what the planner and the fit check read is kept (labels,
annotations, taints, allocatable, readiness; each pod's node, phase and requests): no pod
names, images, environment or secrets. `up` always reads the cluster itself.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

from reclaunch.errors import ProviderError, UsageError

VERSION = 1
MAX_BYTES = 64 * 2**20


def default_path(context: str) -> Path:
    from reclaunch.home import private_dir

    return private_dir("kubernetes", "nodes") / (re.sub(r"[^A-Za-z0-9_.@-]", "_", context) + ".json")


def _node(obj: dict[str, Any]) -> dict[str, Any]:
    md, spec, st = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    return {"metadata": {k: md.get(k) for k in ("name", "labels", "annotations") if md.get(k)},
            "spec": {k: spec[k] for k in ("taints", "unschedulable") if k in spec},
            "status": {"allocatable": st.get("allocatable") or {},
                       "conditions": [{"type": c.get("type"), "status": c.get("status")}
                                      for c in st.get("conditions") or []]}}


def _pod(obj: dict[str, Any]) -> dict[str, Any] | None:
    spec, st = obj.get("spec") or {}, obj.get("status") or {}
    if not spec.get("nodeName"):
        return None

    def only(cs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: c[k] for k in ("resources", "restartPolicy") if k in c} for c in cs or []]
    kept = {"nodeName": spec["nodeName"], "containers": only(spec.get("containers")),
            "initContainers": only(spec.get("initContainers"))}
    if spec.get("overhead"):
        kept["overhead"] = spec["overhead"]
    return {"spec": kept, "status": {"phase": st.get("phase")}}


def save(kube: Any, context: str, path: Path, today: dt.date) -> dict[str, Any]:
    """Read the nodes and pods once; write them to `path` (0600). -> what was written."""
    nodes = kube._call("GET", "/api/v1/nodes").get("items", [])
    pods = [p for p in map(_pod, kube._call("GET", "/api/v1/pods").get("items", [])) if p]
    doc = {"version": VERSION, "context": context, "saved_at": today.isoformat(),
           "nodes": [_node(n) for n in nodes], "pods": pods}
    import os

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)   # node labels: ours only
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, path)
    except OSError as exc:
        from reclaunch.errors import output_error

        raise output_error(str(path), exc) from None
    return {"path": str(path), "nodes": len(doc["nodes"]), "pods": len(pods), "context": context}


def load(path: Path) -> tuple[list[Any], dict[str, Any]]:
    """(nodes.Node list, {context, saved_at}) from a saved file; one-line errors."""
    from reclaunch.runtime.kube_nodes import with_requests

    try:
        if path.stat().st_size > MAX_BYTES:
            raise UsageError(f"{path}: over {MAX_BYTES >> 20} MiB: not a saved node description")
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"no saved nodes at {path}",
                         hint="write it with `reclaunch nodes save --context CONTEXT --out FILE` "
                              "where the cluster is reachable") from None
    except (OSError, ValueError, RecursionError) as exc:
        raise UsageError(f"{path}: not a saved node description ({type(exc).__name__})") from None
    if not isinstance(doc, dict) or doc.get("version") != VERSION or not isinstance(doc.get("nodes"), list):
        raise UsageError(f"{path}: not a saved node description of version {VERSION}",
                         hint="save it again with `reclaunch nodes save`")
    try:
        pods = doc.get("pods") if isinstance(doc.get("pods"), list) else []
        out = with_requests([n for n in doc["nodes"] if isinstance(n, dict)],
                            [p for p in pods if isinstance(p, dict)])
    except (AttributeError, TypeError, ValueError, ZeroDivisionError) as exc:
        raise UsageError(f"{path}: a node or pod in it does not read ({type(exc).__name__})") from None
    return out, {"context": str(doc.get("context") or "?"), "saved_at": str(doc.get("saved_at") or "?")}


def no_kubeconfig_hint(context: str | None, exc: ProviderError) -> str:
    where = f"--context {context} " if context else ""
    return ((exc.hint + "; " if exc.hint else "") + "or plan from a saved description of the "
            f"nodes: `reclaunch nodes save {where}--out nodes.json` where the cluster is "
            "reachable, then `kubernetes: {nodes: nodes.json}` in the spec")
