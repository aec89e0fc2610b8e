"""Schedulability: can every pod we render land on a node pool of the stack, and if not, why.

Each object can be valid on its own while the set never starts: a resource no DaemonSet
advertises on the pool, a label no pool sets, a taint nothing tolerates, a request above what
the node can allocate. This module answers, per pod, the scheduler's questions with values
only (pure; the caller passes the stack's node pools, the add-on facts of k8s/addons.yaml,
and each pool's allocatable resources):

    rows = check(pods_of(objs), pools, addons, capacity)   # [{pod, pool, fits, reasons}]

Rules follow kube-scheduler's filters: NodeAffinity (nodeSelector + required terms),
TaintToleration (NoSchedule/NoExecute), NodeResourcesFit (requests vs allocatable, extended
resources only where a device plugin advertises them). A DaemonSet advertises its resources on
a pool only if its node_selector labels are all on the pool and it tolerates every
NoSchedule/NoExecute taint there (the DaemonSet controller uses the same filters).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Iterable, Mapping, Sequence

from .apiserver import api_server_rules, effective_requests, is_extended, quantity

# Which pools (NodePool.role) each kind of pod is for: job pods run on the GPU pools the stack
# makes for them, everything else on the system pool.
POOL_ROLE = {"training": "gpu", "preflight": "gpu", "rendezvous": "system"}
_BLOCKING = ("NoSchedule", "NoExecute")


@dataclass(frozen=True)
class PodDemand:
    name: str                     # "<object>/<replica role>" e.g. criteo-deepfm/worker
    role: str                     # training | preflight | rendezvous
    replicas: int                 # pods of this template that must run at once
    spec: Mapping[str, Any]       # the pod spec
    problems: tuple[str, ...] = ()   # what the API server would reject in the owning object


def pods_of(objs: Iterable[Mapping[str, Any]], role: str) -> list[PodDemand]:
    """Every pod template of the rendered objects (PyTorchJob replicas, Deployments)."""
    out = []
    for obj in objs:
        kind, spec, name = obj.get("kind"), obj.get("spec") or {}, obj["metadata"]["name"]
        problems = tuple(api_server_rules(dict(obj)))
        if kind == "PyTorchJob":
            for rrole, rs in (spec.get("pytorchReplicaSpecs") or {}).items():
                out.append(PodDemand(f"{name}/{rrole.lower()}", role, int(rs.get("replicas", 1)),
                                     (rs.get("template") or {}).get("spec") or {}, problems))
        elif kind in ("Deployment", "StatefulSet"):
            out.append(PodDemand(name, role, int(spec.get("replicas", 1)),
                                 (spec.get("template") or {}).get("spec") or {}, problems))
        elif kind == "Pod":
            out.append(PodDemand(name, role, 1, spec, problems))
    return out


def pod_requests(spec: Mapping[str, Any]) -> dict[str, Fraction]:
    """The pod's effective request (KEP-753): containers plus native sidecars, or the largest
    plain init container if that is more."""
    running: dict[str, Fraction] = {}
    peak: dict[str, Fraction] = {}

    def add(into: dict[str, Fraction], c: Mapping[str, Any]) -> None:
        for k, v in effective_requests(dict(c)).items():
            into[k] = into.get(k, Fraction(0)) + quantity(v)

    for c in spec.get("initContainers") or []:
        if c.get("restartPolicy") == "Always":
            add(running, c)
        else:
            one = dict(running)
            add(one, c)
            for k, v in one.items():
                peak[k] = max(peak.get(k, Fraction(0)), v)
    for c in spec.get("containers") or []:
        add(running, c)
    return {k: max(running.get(k, Fraction(0)), peak.get(k, Fraction(0)))
            for k in {*running, *peak}}


def _get(pool: Any, field: str) -> Any:
    return pool[field] if isinstance(pool, Mapping) else getattr(pool, field)


def _taint_text(t: Mapping[str, Any]) -> str:
    value = f"={t['value']}" if t.get("value") not in (None, "") else ""
    return f"{t['key']}{value}:{t.get('effect', '')}"


def tolerates(tolerations: Sequence[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    """v1.Toleration.ToleratesTaint."""
    for t in tolerations or ():
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        op = t.get("operator", "Equal")
        if not t.get("key"):
            if op == "Exists":
                return True
            continue
        if t["key"] != taint.get("key"):
            continue
        if op == "Exists" or str(t.get("value", "")) == str(taint.get("value", "") or ""):
            return True
    return False


def untolerated(tolerations: Sequence[Mapping[str, Any]], taints: Sequence[Mapping[str, Any]]
                ) -> list[str]:
    return [_taint_text(t) for t in taints or ()
            if t.get("effect") in _BLOCKING and not tolerates(tolerations, t)]


def _expr_ok(e: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    op, key, values = e.get("operator"), e.get("key"), [str(v) for v in e.get("values") or ()]
    have = labels.get(key)
    if op == "In":
        return have is not None and have in values
    if op == "NotIn":
        return have is None or have not in values
    if op == "Exists":
        return have is not None
    if op == "DoesNotExist":
        return have is None
    if op in ("Gt", "Lt") and have is not None and values:
        try:
            return int(have) > int(values[0]) if op == "Gt" else int(have) < int(values[0])
        except ValueError:
            return False
    return False


def _selector_misses(spec: Mapping[str, Any], labels: Mapping[str, str]) -> list[str]:
    """Labels the pod requires that the pool's nodes lack (nodeSelector, then affinity)."""
    misses = [f"{k}={v}" for k, v in (spec.get("nodeSelector") or {}).items()
              if labels.get(k) != str(v)]
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []
    if terms and not any(all(_expr_ok(e, labels) for e in t.get("matchExpressions") or ())
                         for t in terms):
        misses.append("required node affinity (" + " or ".join(
            " and ".join(f"{e.get('key')} {e.get('operator')} {e.get('values', '')}".strip()
                         for e in t.get("matchExpressions") or ()) for t in terms) + ")")
    return misses


def addon_blocker(addon: Mapping[str, Any], pool: Any) -> str | None:
    """Why this add-on's DaemonSet does not run on the pool's nodes (None: it runs there).
    Facts as k8s/addons.yaml states them: node_selector (equality), node_selector_in
    ({label: [values]}), node_selector_exists ([label]); all must hold."""
    labels = _get(pool, "labels") or {}
    missing = [f"{k}={v}" for k, v in (addon.get("node_selector") or {}).items()
               if labels.get(k) != str(v)]
    missing += [f"{k} in ({', '.join(map(str, vs))})"
                for k, vs in (addon.get("node_selector_in") or {}).items()
                if labels.get(k) not in [str(v) for v in vs]]
    missing += [k for k in addon.get("node_selector_exists") or () if k not in labels]
    if missing:
        return f"needs node label {', '.join(missing)}"
    taints = untolerated(addon.get("tolerations") or [], _get(pool, "taints") or [])
    if taints:
        return f"does not tolerate taint {', '.join(taints)}"
    return None


def fmt_resource(resource: str, value: Fraction) -> str:
    if resource == "memory" or resource.startswith("hugepages-"):
        return f"{float(value) / 2**30:.1f}Gi"
    return f"{float(value):g}"


def _pod_affinity_misses(spec: Mapping[str, Any], labels: Mapping[str, str]) -> list[str]:
    """Topology keys of required pod affinity terms the pool's nodes do not carry (such a
    node can never satisfy the term, even for the first pod of the job)."""
    terms = (((spec.get("affinity") or {}).get("podAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or [])
    return [t.get("topologyKey", "") for t in terms if t.get("topologyKey") not in labels]


def fit_reasons(pod: PodDemand, pool: Any, addons: Sequence[Mapping[str, Any]],
                capacity: Mapping[str, Fraction] | None) -> list[str]:
    """Why `pod` cannot land on a node of `pool` (empty: it can). `capacity` None: the
    node's size is unknown, which is itself a reason (we cannot say it fits)."""
    labels = _get(pool, "labels") or {}
    reasons = [f"lacks label {m}" for m in _selector_misses(pod.spec, labels)]
    reasons += [f"lacks label {k} (pod affinity topology)"
                for k in _pod_affinity_misses(pod.spec, labels)]
    reasons += [f"taint {t} not tolerated"
                for t in untolerated(pod.spec.get("tolerations") or [], _get(pool, "taints"))]
    if capacity is None:
        return reasons + [f"no cpu/memory figures for instance {_get(pool, 'instance_type')}"]
    for name, want in sorted(pod_requests(pod.spec).items()):
        if want <= 0 or name == "ephemeral-storage":
            continue
        if is_extended(name):
            ads = [a for a in addons if name in (a.get("advertises") or ())]
            if not ads:
                reasons.append(f"{name}: no add-on advertises it")
                continue
            blockers = [(a["name"], addon_blocker(a, pool)) for a in ads]
            if all(b for _, b in blockers):
                reasons.append(f"{name}: " + "; ".join(f"{n} {b}" for n, b in blockers))
                continue
        have = capacity.get(name)
        if have is None:
            if not is_extended(name):
                reasons.append(f"{name}: the node does not have it")
            continue   # advertised, count not known here: the device plugin decides
        if want > have:
            reasons.append(f"{name}: requests {fmt_resource(name, want)}, the node has "
                           f"{fmt_resource(name, have)} allocatable")
    return reasons


def _affinity_keys(spec: Mapping[str, Any]) -> list[str]:
    terms = (((spec.get("affinity") or {}).get("podAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or [])
    return [t["topologyKey"] for t in terms if t.get("topologyKey")]


def _room(pod: PodDemand, fitting: Sequence[Any]) -> int:
    """Nodes the pod's replicas can use at once: with a required pod affinity on a topology
    key (one RDMA fabric), only pools sharing a value of that key count together."""
    groups: dict[tuple[str, ...], int] = {}
    keys = _affinity_keys(pod.spec)
    for p in fitting:
        group = tuple(str((_get(p, "labels") or {}).get(k)) for k in keys)
        groups[group] = groups.get(group, 0) + int(_get(p, "max_nodes"))
    return max(groups.values(), default=0)


def place(pod: PodDemand, pools: Sequence[Any], addons: Sequence[Mapping[str, Any]],
          capacity: Mapping[str, Mapping[str, Fraction] | None]) -> dict[str, Any]:
    """One row: the pools `pod` lands on, or why not.

    The stack makes its GPU pools for the job and its system pool for everything else, so a
    job pod must fit EVERY pool of its role (POOL_ROLE): a spot pool whose nodes cannot run
    it would be billed idle while the job waits on the on-demand fallback.
    """
    if pod.problems:
        return {"pod": pod.name, "role": pod.role, "replicas": pod.replicas, "pool": None,
                "fits": False, "reasons": [f"API server rejects: {p}" for p in pod.problems]}
    role = POOL_ROLE.get(pod.role)
    target = [p for p in pools if role is None or _get(p, "role") == role]
    fitting, reasons = [], []
    for pool in target:
        why = fit_reasons(pod, pool, addons, capacity.get(_get(pool, "name")))
        if why:
            reasons += [f"{_get(pool, 'name')}: {w}" for w in why]
        else:
            fitting.append(pool)
    room = _room(pod, fitting)
    if fitting and room < pod.replicas:
        reasons.append(f"needs {pod.replicas} nodes, the pools it fits on hold at most {room}"
                       + (" on one fabric" if _affinity_keys(pod.spec) else ""))
    if not target:
        reasons.append(f"the stack has no {role or ''} node pool".replace("  ", " "))
    return {"pod": pod.name, "role": pod.role, "replicas": pod.replicas,
            "pool": ", ".join(_get(p, "name") for p in fitting) or None,
            "fits": not reasons, "reasons": reasons}


def check(pods: Sequence[PodDemand], pools: Sequence[Any], addons: Sequence[Mapping[str, Any]],
          capacity: Mapping[str, Mapping[str, Fraction] | None]) -> list[dict[str, Any]]:
    """[{pod, role, replicas, pool, fits, reasons}] for every pod, in the order given."""
    return [place(p, pools, addons, capacity) for p in pods]


def unschedulable(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in rows if not r["fits"]]
