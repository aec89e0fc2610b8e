"""Schedulability on the nodes the API returned: the stacks' check (manifests/schedule.py
fit_reasons: node affinity, taints, requests vs what is free) per pod and per real node.

A pod template of `replicas` pods fits when at least that many nodes take one each now (one
training pod per node: each asks for the node's GPUs). Rows have the shape `preview` prints for
the stacks: {pod, role, replicas, pool, fits, reasons}; `pool` names the nodes it lands on, and
each reason names the node and the missing resource, label or toleration.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

from reclaunch.manifests.placement import launch_objects
from reclaunch.manifests.schedule import fit_reasons, pod_requests, pods_of
from reclaunch.runtime.kube_nodes import GKE_NETWORK_PREFIX, Node

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

_SHOWN = 3   # nodes named per pod when many fail the same way


class _NodeAsPool:
    """A node in the shape fit_reasons reads (name, labels, taints, instance_type)."""

    def __init__(self, node: Node):
        self.name, self.labels, self.taints = node.name, node.labels, node.taints
        self.instance_type = node.labels.get("node.kubernetes.io/instance-type", node.name)


def _capacity(node: Node, wanted: set[str]) -> dict[str, Fraction]:
    # Every resource a pod asks for gets a figure: 0 where the node does not advertise it, so
    # the reason reads "requests 32, the node has 0" instead of being skipped as unknown.
    free = node.free
    return {k: free.get(k, Fraction(0)) for k in {*free, *wanted}}


def _networks(template_meta: dict[str, Any]) -> list[str]:
    """GKE Network objects a pod joins (its networking.gke.io/interfaces annotation)."""
    import json
    text = ((template_meta or {}).get("annotations") or {}).get("networking.gke.io/interfaces")
    try:
        return [i["network"] for i in json.loads(text or "[]") if i.get("network") != "default"]
    except (ValueError, TypeError, KeyError):
        return []


def node_reasons(pod, node: Node, networks: list[str] = ()) -> list[str]:
    if not node.ready:
        return ["not Ready"]
    if node.unschedulable:
        return ["cordoned (spec.unschedulable)"]
    wanted = set(pod_requests(pod.spec))
    # The node's allocatable is the device plugins' own count: nothing else to prove.
    ads = [{"name": "the node", "advertises": sorted(wanted), "tolerations": [{"operator": "Exists"}]}]
    out = fit_reasons(pod, _NodeAsPool(node), ads, _capacity(node, wanted))
    have = sorted(k[len(GKE_NETWORK_PREFIX):] for k in node.allocatable
                  if k.startswith(GKE_NETWORK_PREFIX) and not k.endswith(".IP"))
    missing = [n for n in networks if n not in have]
    if missing:   # GKE admits the pod only onto a node attached to every network it names
        out.append(f"not attached to GKE network(s) {', '.join(missing)} the pod names "
                   f"(the node has {', '.join(have) or 'none'})")
    return out


def place(pod, nodes: list[Node], networks: list[str] = ()) -> dict[str, Any]:
    if pod.problems:
        return {"pod": pod.name, "role": pod.role, "replicas": pod.replicas, "pool": None,
                "fits": False, "reasons": [f"API server rejects: {p}" for p in pod.problems]}
    fitting, failing = [], []
    for n in nodes:
        why = node_reasons(pod, n, networks)
        (failing.append((n.name, why)) if why else fitting.append(n.name))
    reasons = []
    if len(fitting) < pod.replicas:
        per_node = [f"{name}: {'; '.join(why)}" for name, why in failing[:_SHOWN]]
        # The first line is what `up` prints when it refuses: the count and the first node's why.
        reasons.append(f"needs {pod.replicas} node(s) (the whole job), {len(fitting)} can take a pod now"
                       + (f" ({', '.join(fitting)})" if fitting else "")
                       + (f"; {per_node[0]}" if per_node else ""))
        reasons += per_node[1:]
        if len(failing) > _SHOWN:
            reasons.append(f"... and {len(failing) - _SHOWN} more node(s)")
    return {"pod": pod.name, "role": pod.role, "replicas": pod.replicas,
            "pool": ", ".join(fitting[:8]) + (" ..." if len(fitting) > 8 else "") or None,
            "fits": not reasons, "reasons": reasons}


def schedule(plan: "Plan", nodes: list[Node]) -> list[dict[str, Any]]:
    """One row per pod template `up` would apply (training, the NCCL preflight). The Master
    and Worker templates of one job land together, so their replicas count as one need; the
    training job and the preflight run one after the other, so each is checked on its own."""
    from dataclasses import replace

    pods, nets = [], {}
    for role, objs in launch_objects(plan).items():
        for obj in objs:
            for p in pods_of([obj], role):
                pods.append(p)
                nets[p.name] = _networks(_template_meta(obj, p.name))
    total: dict[str, int] = {}
    for p in pods:
        job = p.name.split("/", 1)[0]
        total[job] = total.get(job, 0) + p.replicas
    gpu_first = sorted(nodes, key=lambda n: (n.gpus == 0, n.name))
    return [place(replace(p, replicas=total[p.name.split("/", 1)[0]]), gpu_first, nets[p.name])
            | {"replicas": p.replicas} for p in pods]


def _template_meta(obj: dict[str, Any], pod_name: str) -> dict[str, Any]:
    spec = obj.get("spec") or {}
    if obj.get("kind") == "PyTorchJob":
        for rrole, rs in (spec.get("pytorchReplicaSpecs") or {}).items():
            if pod_name.endswith("/" + rrole.lower()):
                return (rs.get("template") or {}).get("metadata") or {}
        return {}
    return (spec.get("template") or {}).get("metadata") or {}
