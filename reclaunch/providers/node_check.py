"""The node model against the real nodes: `up`, once the GPU nodes are Ready and before the job
starts, reads each one's status.allocatable (what its kubelet reports) and compares it with
the model the pods were sized from (catalog/node.py through manifests/nodes.py).

Every figure is recorded in the journal ("nodes" step: the evidence catalog/data/
node_figures.csv wants, for the AMIs and sizes nobody has published). A node the model
overstates is a warning with the numbers; a node that cannot hold the training pod's requests
beside the pods already on it (its DaemonSets) stops `up` before the job starts, naming the
numbers: that pod would stay Pending while the GPU nodes bill. `--force` starts it anyway.
Devices (GPUs, EFA, IB) are not judged here: their plugins may advertise them later.
"""

from __future__ import annotations

import time
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Callable

from reclaunch.errors import ProviderError
from reclaunch.tags import CLUSTER_TAG, GPU_LABEL, POOL_LABEL

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.manifests.launch import Launch
    from reclaunch.planner.model import Plan
    from reclaunch.runtime.kube_nodes import Node

# GPU nodes join minutes after their instances run (driver, device plugins): wait that long
# for the first one, then go on unchecked rather than hold the job back.
WAIT_S = 600.0
POLL_S = 15.0


def _judged(name: str) -> bool:
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def _exact(name: str, value: Fraction) -> str:
    """A quantity as the API writes it, exactly: cpu in millicores, the rest in bytes."""
    return f"{int(value * 1000)}m" if name == "cpu" else str(int(value))


def _training_pod(launch: "Launch") -> tuple[dict[str, Fraction], Fraction | None]:
    """(requests, memory limit) of one training pod of the launch."""
    from reclaunch.manifests.apiserver import quantity
    from reclaunch.manifests.schedule import pod_requests

    spec = next(iter(launch.job["spec"]["pytorchReplicaSpecs"].values()))["template"]["spec"]
    limit = ((spec["containers"][0].get("resources") or {}).get("limits") or {}).get("memory")
    return pod_requests(spec), (quantity(limit) if limit else None)


def compare(plan: "Plan", node: "Node", requests: dict[str, Fraction],
            limit: Fraction | None) -> tuple[list[str], list[str], dict[str, Any]]:
    """(warnings, refusals, record) for one Ready GPU node: pure, for `check` and the tests."""
    from reclaunch.manifests.nodes import pool_node
    from reclaunch.manifests.schedule import fmt_resource as fmt
    from reclaunch.manifests.stackfacts import node_pools

    pool = next((p for p in node_pools(plan) if p.name == node.labels.get(POOL_LABEL)), None)
    model = pool_node(plan, pool).allocatable() if pool is not None else {}
    real = {k: v for k, v in node.allocatable.items() if _judged(k)}
    where = f"node {node.name} ({node.labels.get('node.kubernetes.io/instance-type', '?')})"
    warn = [f"{where}: {k} modelled {fmt(k, v)}, its kubelet reports {fmt(k, real.get(k, 0))}"
            for k, v in model.items() if _judged(k) and real.get(k, Fraction(0)) < v]
    free = node.free
    refuse = [f"{where}: {k}: the training pod requests {fmt(k, v)}, the node has "
              f"{fmt(k, real.get(k, 0))} allocatable of which pods already there request "
              f"{fmt(k, node.requested.get(k, 0))}"
              for k, v in requests.items() if _judged(k) and free.get(k, Fraction(0)) < v]
    if limit is not None and not refuse and limit > free.get("memory", Fraction(0)):
        warn.append(f"{where}: the training pod's memory limit {fmt('memory', limit)} is above "
                    f"the {fmt('memory', free.get('memory', 0))} the node leaves it")
    record = {"node": node.name, "pool": node.labels.get(POOL_LABEL, ""),
              "instance_type": node.labels.get("node.kubernetes.io/instance-type", ""),
              "allocatable": {k: _exact(k, v) for k, v in sorted(real.items())},
              # what the pods already there (the DaemonSets, before the job) request: the
              # per-node figure k8s/addons.yaml's managed rows take from non-GPU nodes
              "requested": {k: _exact(k, v) for k, v in sorted(node.requested.items())
                            if _judged(k)},
              "modelled": {k: _exact(k, v) for k, v in sorted(model.items()) if _judged(k)}}
    return warn, refuse, record


def check(plan: "Plan", kube: Any, launch: "Launch", *, out: Any, force: bool = False,
          wait_s: float = WAIT_S, sleep: Callable[[float], None] = time.sleep,
          clock: Callable[[], float] = time.monotonic) -> dict[str, Any]:
    """Wait (bounded) for Ready GPU nodes of this cluster, compare each with the model; the
    journal data of the step. Raises ProviderError on a node that cannot hold the pod."""
    from reclaunch.manifests.schedule import fmt_resource as fmt
    from reclaunch.runtime.kube_nodes import read_nodes
    from reclaunch.ui.text import shown

    if launch.job is None:
        return {"message": "no job to check"}
    end = clock() + wait_s
    while True:
        mine = [n for n in read_nodes(kube) if n.ready and n.labels.get(CLUSTER_TAG) == plan.name
                and n.labels.get(GPU_LABEL) == "true"]
        if mine or clock() >= end:
            break
        sleep(POLL_S)
    if not mine:
        why = (f"no GPU node Ready within {wait_s:g} s: the node model was not checked "
               "against a real node")
        out.print(f"[yellow]{shown(why)}[/yellow]")
        return {"message": "no Ready GPU node to check", "nodes": []}
    requests, limit = _training_pod(launch)
    warnings: list[str] = []
    refusals: list[str] = []
    records = []
    for node in mine:
        w, r, rec = compare(plan, node, requests, limit)
        warnings += w
        refusals += r
        records.append(rec)
        have = ", ".join(f"{k} {fmt(k, v)}" for k, v in sorted(node.allocatable.items())
                         if _judged(k))
        out.print("  node " + shown(f"{rec['node']} {rec['instance_type']}: allocatable {have}"))
    for line in warnings:
        out.print(f"[yellow]{shown(line)}[/yellow]")
    if refusals and not force:
        raise ProviderError(f"refusing to start the job: {refusals[0]}"
                            + (f" (and {len(refusals) - 1} more)" if len(refusals) > 1 else ""),
                            hint=f"the cluster is up: `reclaunch down {plan.name}`, or rerun "
                                 "`reclaunch up` with --force to start it anyway")
    return {"message": f"{len(mine)} GPU node(s) read; {len(warnings)} warning(s)",
            "nodes": records[:64], "warnings": warnings[:20], "refusals": refusals[:20]}
