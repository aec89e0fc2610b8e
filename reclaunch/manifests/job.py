"""Plan -> Kubernetes manifests (pure: values in, dicts out; applying is kube.py's job).

What we render: the Namespace, a ConfigMap holding the resolved plan, a PVC where the storage
is claimed dynamically (cephfs, pvc; the Pulumi stack pre-creates the PV/PVC `<name>-data` for
file systems it provisions), the fabric's ConfigMaps (Azure's NCCL topology), for elastic
(spot) jobs the rendezvous store (manifests/rdzv.py), and the PyTorchJob (kubeflow.org/v1).
Output size does not depend on the node count: nodes are replica counts, never loops.
"""

from __future__ import annotations

import copy
import json
import math
import shlex
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from reclaunch import clouds
from reclaunch.manifests import rdzv, workdir
from reclaunch.manifests.restarts import backoff_limit
from reclaunch.tags import CAPACITY_LABEL, CLUSTER_TAG as CLUSTER_LABEL, MANAGED_TAG as MANAGED_LABEL
from reclaunch.tags import JOB_NAME_LABEL, PYTORCHJOB_API
# The plan's fabric profile, single-node aware: the same one the stack sizes its pools from.
from stacks.fabric_facts import fabric_profile, multi_node  # noqa: F401  (callers import them here)

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

LOCAL_IMAGE = "reclaunch-trainer:local"
MASTER_PORT = 23456                          # the training operator's default port
# Kinds the stack provisions and binds as `<name>-data`; the rest are claimed here.
TTL_AFTER_FINISHED = 24 * 3600               # keep finished pods' logs for a day


def spot_tolerations(plan: "Plan") -> tuple[dict, ...]:
    """Taints this cloud's managed node pools put on spot capacity (its facts'
    spot_tolerations), and no other cloud's: a pod tolerating taints its cluster never sets
    tells a reader (and a policy) the wrong thing about where it may land."""
    return tuple(dict(t) for t in clouds.get(plan.cloud).spot_tolerations)


GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
GRACE_SECONDS = 120          # a pod deleted by `down` or drained from an on-demand node
# torchrun SIGKILLs its workers 30 s after forwarding SIGTERM unless told otherwise
# (torch/distributed/run.py --shutdown-timeout, env TORCH_ELASTIC_SHUTDOWN_TIMEOUT): give the
# workers the pod's grace period minus a few seconds for torchrun itself to exit.
TORCHRUN_EXIT_SECONDS = 5


def grace_seconds(plan: "Plan") -> int:
    """terminationGracePeriodSeconds: on spot, what a reclaim really leaves the pod (the cloud's
    facts, the plan's reclaim_notice_seconds: AWS 120, GKE 105 on our pools, AKS 30), so that
    torchrun stops its workers while the node still exists; otherwise GRACE_SECONDS."""
    notice = plan.constants.get("reclaim_notice_seconds") if plan.spot else None
    return int(notice) if notice else GRACE_SECONDS


def labels(plan: "Plan", **extra: str) -> dict[str, str]:
    return {CLUSTER_LABEL: plan.name, MANAGED_LABEL: "true",
            "app.kubernetes.io/managed-by": "reclaunch", **extra}


def _meta(plan: "Plan", name: str, namespaced: bool = True, **extra_labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels(plan, **extra_labels)}
    if namespaced:
        meta["namespace"] = plan.spec.namespace
    return meta


def _launcher(command: list[str], args: list[str]) -> tuple[list[str], list[str]]:
    """Run the user's script under torchrun, which reads the operator's PET_* variables
    (manifests/launcher.py: the rule `cloud: local` uses too). A command that already is
    torchrun, or is not python, is the user's own launcher, kept as is."""
    from reclaunch.manifests.launcher import is_torchrun, torchrun_tail

    if is_torchrun(command):
        return command, args
    tail = torchrun_tail(command)
    return (["torchrun", *tail], args) if tail else (command, args)


# How much of what a node leaves to pods (manifests/nodes.py) the training pod requests. It
# takes every GPU of its node, so nothing else of ours shares the node: the request only has
# to get the pod placed, and the limit decides what it may use. Requesting all of the modelled
# node buys nothing and turns any error in the model (an instance family's firmware reserve,
# hugepages an AMI pre-allocates, a DaemonSet a team adds) into a pod that stays Pending while
# a GPU node bills, and an autoscaler adding nodes for it. A tenth stays unrequested (tens of
# GiB on the 8-GPU nodes); the memory limit is the modelled node itself, so the job can still
# use that tenth, and never what the kubelet and the DaemonSets were left.
REQUEST_SHARE = Fraction(9, 10)


def pod_resources(plan: "Plan") -> dict[str, dict[str, Any]]:
    """Requests/limits for one training pod: the fabric's devices and hugepages, and
    REQUEST_SHARE of the cpu and memory one GPU node leaves to pods (manifests/nodes.py: the
    node model less the DaemonSets), the figure the schedulability check fits pods against."""
    from reclaunch.manifests.nodes import job_node

    req = requirements(plan)
    limits: dict[str, Any] = dict(req.resources)
    requests: dict[str, Any] = dict(req.resources)
    node = job_node(plan)
    if node is not None:
        cpu = max(1, math.floor(node["cpu"] * REQUEST_SHARE))
        mem_gib = max(1, math.floor(node["memory"] * REQUEST_SHARE / 2**30))
        requests.update({"cpu": str(cpu), "memory": f"{mem_gib}Gi"})
        # no CPU limit: throttling hurts the dataloader
        limits["memory"] = f"{max(mem_gib, math.floor(node['memory'] / 2**30))}Gi"
    elif any(k.startswith("hugepages-") for k in requests):
        # The API server refuses hugepages without a cpu or memory request.
        requests["memory"] = limits["memory"] = "8Gi"
    return {"requests": requests, "limits": limits}


def requirements(plan: "Plan"):
    """fabric.PodRequirements of the plan's pods (daemon image from the pinned stacks row)."""
    from reclaunch.fabric import pod_requirements
    from reclaunch.manifests.stackfacts import rxdm_image

    prof = fabric_profile(plan)
    return pod_requirements(prof, plan.name, plan.gpus_per_node, rxdm_image=rxdm_image(prof))


def _storage(plan: "Plan") -> tuple[list[dict], list[dict], list[dict]]:
    """-> (objects to create, volumes, volume mounts) for spec.storage."""
    st = plan.spec.storage
    kind = clouds.storage_kind(st.kind)   # the one record of this storage kind (its cloud's facts)
    claim = f"{plan.name}-data"
    if not (kind.mounted and kind.claim):   # none, bucket (fsspec), a host directory (local)
        return [], [], []
    objs = []
    if not kind.created_by_stack:
        spec: dict[str, Any] = {"accessModes": ["ReadWriteMany"],
                                "resources": {"requests": {"storage": f"{math.ceil((st.size or 2**40) / 2**30)}Gi"}}}
        sc = st.storage_class or (kind.storage_class.format(name=plan.name) if kind.storage_class else None)
        if sc:
            spec["storageClassName"] = sc
        objs.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                     "metadata": _meta(plan, claim), "spec": spec})
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    mounts = [{"name": "data", "mountPath": st.mount_path}]
    return objs, volumes, mounts


def _env_list(env: dict[str, str]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in env.items()]


def _pod_template(plan: "Plan", volumes: list[dict], mounts: list[dict]) -> dict[str, Any]:
    from reclaunch.fabric import ld_library_export, nccl_env
    from reclaunch.manifests.env import job_env
    from reclaunch.manifests.secrets import secret_refs, value_from
    from reclaunch.manifests.stackfacts import pod_identity

    spec = plan.spec
    req = requirements(plan)
    # A single-node job gets no fabric NCCL settings (plan.nccl_env has the network's).
    nccl = (None if multi_node(plan) else
            nccl_env(fabric_profile(plan), spec.nccl.env, debug=spec.nccl.debug))
    shutdown = max(1, grace_seconds(plan) - TORCHRUN_EXIT_SECONDS)
    env = {"TORCH_ELASTIC_SHUTDOWN_TIMEOUT": str(shutdown), **req.env, **job_env(plan, nccl=nccl)}
    if req.exit_file:
        env["RECLAUNCH_EXIT_FILE"] = req.exit_file
    command, args = _launcher(list(spec.job.command), list(spec.job.args))
    lines = [ld_library_export(req.ld_library_path)] if req.ld_library_path else []
    if req.exit_file:
        # TCPX's sidecar runs until this file appears; without it the pod never completes. The
        # shell must outlive the launcher to touch it, so it cannot `exec`; as PID 1 it would
        # then swallow the kubelet's SIGTERM (PID 1 has no default handlers): forward it.
        # Touched on success only: a failed container is restarted in place (OnFailure) and
        # needs the sidecar still there, which exits 0 on the file and is never restarted.
        lines += [shlex.join([*command, *args]) + " &",
                  'child=$!',
                  "trap 'kill -TERM \"$child\" 2>/dev/null' TERM INT",
                  'wait "$child"; rc=$?',
                  # a trapped signal interrupts `wait`; the child (zombie or alive) is still ours
                  'while kill -0 "$child" 2>/dev/null; do wait "$child"; rc=$?; done',
                  f'[ "$rc" -eq 0 ] && touch {shlex.quote(req.exit_file)}',
                  'exit "$rc"']
    elif lines:
        lines.append("exec " + shlex.join([*command, *args]))
    if lines:
        command, args = ["/bin/sh", "-c", "\n".join(lines)], []
    container: dict[str, Any] = {
        "name": "pytorch",                      # the operator looks for this name
        # cloud: local needs no image; rendering it shows the cluster job with the image that
        # `docker build -t reclaunch-trainer:local examples/trainer` produces.
        "image": spec.job.image or LOCAL_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "command": command,
        "args": args,
        "env": _env_list(env) + value_from(secret_refs(plan)),   # secrets.py: never a value
        "ports": [{"name": "pytorchjob-port", "containerPort": MASTER_PORT}],
        "resources": pod_resources(plan),
    }
    tpl = pod_template(plan, container, req, job_name=plan.name, volumes=volumes, mounts=mounts)
    if ident := pod_identity(plan):   # checkpoints in a bucket: the job's own identity (stacks/identity.py)
        tpl["spec"]["serviceAccountName"] = ident["service_account"]
        tpl["metadata"]["labels"].update(ident["labels"])
        tpl["spec"]["containers"][0]["env"][:0] = _env_list(ident["env"])
    elif sa := (plan.spec.kubernetes.service_account if plan.spec.kubernetes else None):
        tpl["spec"]["serviceAccountName"] = sa   # a cluster you bring: the team's identity
    workdir.add_to(plan, tpl, _env_list(ident["env"]) if ident else [])   # job.workdir, if any
    return tpl


def pod_template(plan: "Plan", container: dict[str, Any], req: Any, *, job_name: str,
                 volumes: list[dict] = (), mounts: list[dict] = (),
                 extra_labels: dict[str, str] | None = None) -> dict[str, Any]:
    """The one pod template of every pod that runs on the GPU pools (training and the NCCL
    preflight): placement (node selector, tolerations, one-fabric affinity), the fabric's
    sidecars, init containers, devices, annotations and capabilities, and /dev/shm. Only the
    main container differs; so the preflight lands exactly where training will."""
    container = {**container, "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"},
                                               *mounts, *req.volume_mounts]}
    if req.capabilities:
        container["securityContext"] = {"capabilities": {"add": sorted(req.capabilities)}}
    node_selector, tolerations = _placement(plan)
    affinity = _affinity(plan, job_name)
    pod: dict[str, Any] = {
        "nodeSelector": node_selector,
        "tolerations": tolerations,
        "terminationGracePeriodSeconds": grace_seconds(plan),
        "containers": [container, *req.sidecars],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": req.shm_size}},
                    *volumes, *req.volumes],
    }
    if req.init_containers:
        pod["initContainers"] = req.init_containers
    if affinity:
        pod["affinity"] = affinity
    meta: dict[str, Any] = {"labels": labels(plan, **(extra_labels or {}))}
    if req.annotations:
        meta["annotations"] = dict(req.annotations)
    return {"metadata": meta, "spec": pod}


def budget_deadline_seconds(plan: "Plan") -> int | None:
    """activeDeadlineSeconds: the job stops once the budget would be spent at the planned rate."""
    from reclaunch.planner.cost import cluster_usd_per_hour

    budget = plan.spec.budget.max_usd
    rate = cluster_usd_per_hour(plan)    # the same hourly figure the budget guard uses
    if not budget or not rate:
        return None
    return max(60, int(budget / rate * 3600))


def pytorch_job(plan: "Plan", volumes: list[dict], mounts: list[dict]) -> dict[str, Any]:
    spec = plan.spec
    template = _pod_template(plan, volumes, mounts)
    run_policy: dict[str, Any] = {
        "cleanPodPolicy": "Running",            # finished pods stay for `reclaunch logs`
        "ttlSecondsAfterFinished": TTL_AFTER_FINISHED,
        # Counted per container restart over all pods (manifests/restarts.py), not per job.
        "backoffLimit": backoff_limit(plan, template),
    }
    deadline = budget_deadline_seconds(plan)
    if deadline:
        run_policy["activeDeadlineSeconds"] = deadline
    job_spec: dict[str, Any] = {"runPolicy": run_policy, "nprocPerNode": str(plan.gpus_per_node)}
    if plan.spot:
        # Elastic: workers only, c10d rendezvous; a reclaimed node re-joins or the job
        # carries on with >= min nodes from the last checkpoint. A model-parallel plan has
        # min = max (planner.core): its sharded tables are laid out for one world size.
        # The rendezvous store runs off the workers (manifests/rdzv.py), not on worker-0.
        job_spec["elasticPolicy"] = {
            "rdzvBackend": "c10d", "minReplicas": plan.min_nodes, "maxReplicas": plan.max_nodes,
            "maxRestarts": spec.job.max_restarts,
            **rdzv.elastic_fields(plan.name, spec.namespace),
        }
        job_spec["pytorchReplicaSpecs"] = {
            "Worker": {"replicas": plan.nodes, "restartPolicy": "OnFailure", "template": template}}
    else:
        replicas = {"Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": template}}
        if plan.nodes > 1:
            replicas["Worker"] = {"replicas": plan.nodes - 1, "restartPolicy": "OnFailure",
                                  "template": copy.deepcopy(template)}
        job_spec["pytorchReplicaSpecs"] = replicas
    return {"apiVersion": PYTORCHJOB_API, "kind": "PyTorchJob",
            "metadata": _meta(plan, plan.name), "spec": job_spec}


def _placement(plan: "Plan") -> tuple[dict[str, str], list[dict[str, Any]]]:
    """(nodeSelector, tolerations) that land a pod on this cluster's GPU pools, plus what the
    cloud's stack asks for (stacks.<cloud>.job_placement, e.g. GKE's ComputeClass)."""
    from reclaunch.manifests.stackfacts import job_placement

    extra = job_placement(plan)
    own = bool(extra.get("own_nodes"))   # existing nodes: selected by their own labels only
    node_selector = {} if own else {CLUSTER_LABEL: plan.name}
    if plan.instance_type and not own:
        node_selector["node.kubernetes.io/instance-type"] = plan.instance_type
    node_selector.update(extra["node_selector"])
    tolerations = [dict(GPU_TOLERATION)]
    if plan.spot:
        tolerations.extend(spot_tolerations(plan))
    tolerations += [t for t in extra["tolerations"] if t not in tolerations]
    return node_selector, tolerations


def _affinity(plan: "Plan", job_name: str) -> dict[str, Any]:
    """Prefer spot nodes (the on-demand pool is the fallback), and keep every pod of a
    multi-node job on one RDMA fabric: on AKS each scale set is its own InfiniBand fabric
    (stacks.common.FABRIC_GROUP_LABEL), so spot and on-demand nodes cannot share a job."""
    from reclaunch.manifests.stackfacts import fabric_group_label

    out: dict[str, Any] = {}
    if plan.spot:
        out["nodeAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "preference": {"matchExpressions": [
                {"key": CAPACITY_LABEL, "operator": "In", "values": ["spot"]}]}}]}
    group = fabric_group_label(plan)
    if group and multi_node(plan):
        out["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {JOB_NAME_LABEL: job_name}},
             "topologyKey": group}]}
    return out


def preflight_job(plan: "Plan", *, max_bytes: str = "8G") -> dict[str, Any]:
    """The NCCL all-reduce check for this plan: every GPU of every node, the job's own image,
    fabric profile and nccl.env, scheduled exactly where the training pods will run."""
    from reclaunch.manifests.preflight import nccl_tests_job

    from reclaunch.manifests.stackfacts import rxdm_image

    name, prof = f"{plan.name}-nccl", fabric_profile(plan)
    req = requirements(plan)
    return nccl_tests_job(name, plan.spec.namespace,
                          plan.spec.job.image or LOCAL_IMAGE, plan.nodes, plan.gpus_per_node,
                          prof, cluster_name=plan.name,
                          user_env=dict(plan.spec.nccl.env), max_bytes=max_bytes,
                          labels=labels(plan), rxdm_image=rxdm_image(prof),
                          template=lambda c: pod_template(plan, c, req, job_name=name,
                                                          extra_labels={"reclaunch-role": "preflight"}))


def prerequisites(plan: "Plan") -> list[dict[str, Any]]:
    """What both the training job and the preflight job need first: the Namespace and the
    fabric's ConfigMaps. `render --preflight --out` repeats them in the preflight folder."""
    cms = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(plan, name),
            "data": dict(data)} for name, data in requirements(plan).config_maps.items()]
    return [{"apiVersion": "v1", "kind": "Namespace",
             "metadata": _meta(plan, plan.spec.namespace, False)}, *cms]


def render(plan: "Plan") -> list[dict[str, Any]]:
    """Every object to apply, in apply order."""
    from reclaunch.manifests.env import sharding_json

    objs, volumes, mounts = _storage(plan)
    plan_json = json.dumps(plan.to_json(per_rank=False), indent=1, sort_keys=True, default=str)
    store = (rdzv.store_objects(plan.name, plan.spec.namespace,
                                plan.spec.job.image or LOCAL_IMAGE, labels(plan))
             if plan.spot else [])
    return [
        *prerequisites(plan),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(plan, f"{plan.name}-plan"),
         "data": {"plan.json": plan_json, "sharding.json": sharding_json(plan, indent=1)}},
        *workdir.objects(plan, _meta),
        *objs,
        *store,
        pytorch_job(plan, volumes, mounts),
    ]


def to_yaml(objs: list[dict[str, Any]]) -> str:
    """YAML documents, `kubectl apply -f`-ready: no anchors/aliases, keys in render order."""
    import yaml

    class NoAliases(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:
            return True

    def text(dumper: yaml.SafeDumper, data: str) -> Any:
        # Multi-line values (plan.json, the NCCL topology file) as readable `|` blocks.
        style = "|" if "\n" in data else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)

    NoAliases.add_representer(str, text)

    return yaml.dump_all(objs, Dumper=NoAliases, sort_keys=False, default_flow_style=False,
                         width=100)


def file_name(index: int, obj: dict[str, Any]) -> str:
    return f"{index:02d}-{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"
