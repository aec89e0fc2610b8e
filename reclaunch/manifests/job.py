"""Plan -> Kubernetes manifests (pure: values in, dicts out; applying is kube.py's job).

What we render: the Namespace, a ConfigMap holding the resolved plan, a PVC where the storage
is claimed dynamically (cephfs, pvc; the Pulumi stack pre-creates the PV/PVC `<name>-data` for
file systems it provisions), and the PyTorchJob (kubeflow.org/v1). Output size does not depend
on the node count: nodes are replica counts, never loops.
"""

from __future__ import annotations

import copy
import json
import math
import shlex
from typing import TYPE_CHECKING, Any

from reclaunch.tags import CAPACITY_LABEL, CLUSTER_TAG as CLUSTER_LABEL, MANAGED_TAG as MANAGED_LABEL

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

LOCAL_IMAGE = "reclaunch-trainer:local"
MASTER_PORT = 23456                          # the training operator's default port
# Kinds the stack provisions and binds as `<name>-data`; the rest are claimed here.
from reclaunch.spec.facts import STACK_PROVISIONED  # noqa: E402  (the one storage table)
TTL_AFTER_FINISHED = 24 * 3600               # keep finished pods' logs for a day
# Taints managed node pools put on spot capacity; tolerating an absent taint is harmless,
# so one list serves every cloud (no cloud-name branching here).
SPOT_TOLERATIONS = (
    {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot",
     "effect": "NoSchedule"},
    {"key": "cloud.google.com/gke-spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
)
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def labels(plan: "Plan", **extra: str) -> dict[str, str]:
    return {CLUSTER_LABEL: plan.name, MANAGED_LABEL: "true",
            "app.kubernetes.io/managed-by": "reclaunch", **extra}


def _meta(plan: "Plan", name: str, namespaced: bool = True, **extra_labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels(plan, **extra_labels)}
    if namespaced:
        meta["namespace"] = plan.spec.namespace
    return meta


def _launcher(command: list[str], args: list[str]) -> tuple[list[str], list[str]]:
    """Run the user's script under torchrun, which reads the operator's PET_* variables.

    `python x.py` becomes `torchrun x.py`; a command that already is torchrun (or
    torch.distributed.run) is kept; anything else is the user's own launcher, kept as is.
    """
    head = command[0].rsplit("/", 1)[-1]
    if head == "torchrun" or "torch.distributed.run" in command:
        return command, args
    if head.startswith("python") and len(command) > 1 and command[1] != "-c":
        rest = command[1:]
        if rest[0] == "-m":
            return ["torchrun", "--module", *rest[1:]], args
        return ["torchrun", *rest], args
    return command, args


def pod_resources(plan: "Plan") -> dict[str, dict[str, Any]]:
    """Requests/limits for one training pod: the node minus what the system keeps.

    Kubelet, the CNI, device plugins and log agents need room: we leave 6% of vCPUs (at least
    2) and 8% of memory (at least 8 GiB), close to EKS/GKE/AKS allocatable on GPU instances.
    """
    from reclaunch.fabric import pod_requirements

    req = pod_requirements(fabric_profile(plan), plan.name, plan.gpus_per_node)
    limits: dict[str, Any] = dict(req.resources)
    requests: dict[str, Any] = dict(req.resources)
    offer = plan.offer
    if offer is not None:
        cpu = max(1, offer.vcpus - max(2, math.ceil(offer.vcpus * 0.06)))
        mem_gib = max(1, int(offer.ram_gib - max(8.0, offer.ram_gib * 0.08)))
        requests.update({"cpu": str(cpu), "memory": f"{mem_gib}Gi"})
        limits["memory"] = f"{mem_gib}Gi"   # no CPU limit: throttling hurts the dataloader
    return {"requests": requests, "limits": limits}


def fabric_profile(plan: "Plan"):
    from reclaunch.fabric import get_profile, profile_for

    if plan.instance_type:
        return profile_for(plan.cloud, plan.instance_type, plan.spec.interconnect.inter_node)
    return get_profile(plan.fabric)


def _storage(plan: "Plan") -> tuple[list[dict], list[dict], list[dict]]:
    """-> (objects to create, volumes, volume mounts) for spec.storage."""
    st = plan.spec.storage
    claim = f"{plan.name}-data"
    if st.kind in ("none", "hostpath"):
        return [], [], []
    objs = []
    if st.kind not in STACK_PROVISIONED:
        spec: dict[str, Any] = {"accessModes": ["ReadWriteMany"],
                                "resources": {"requests": {"storage": f"{math.ceil((st.size or 2**40) / 2**30)}Gi"}}}
        sc = st.storage_class or (f"{plan.name}-cephfs" if st.kind == "cephfs" else None)
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
    from reclaunch.fabric import pod_requirements
    from reclaunch.manifests.env import job_env

    spec = plan.spec
    req = pod_requirements(fabric_profile(plan), plan.name, plan.gpus_per_node)
    env = {**req.env, **job_env(plan)}
    if req.exit_file:
        env["RECLAUNCH_EXIT_FILE"] = req.exit_file
    command, args = _launcher(list(spec.job.command), list(spec.job.args))
    if req.exit_file:
        # TCPX's sidecar runs until this file appears; without it the pod never completes.
        script = f"trap 'touch {shlex.quote(req.exit_file)}' EXIT\n{shlex.join([*command, *args])}"
        command, args = ["/bin/sh", "-c", script], []
    container: dict[str, Any] = {
        "name": "pytorch",                      # the operator looks for this name
        # cloud: local needs no image; rendering it shows the cluster job with the image that
        # `docker build -t reclaunch-trainer:local examples/trainer` produces.
        "image": spec.job.image or LOCAL_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "command": command,
        "args": args,
        "env": _env_list(env),
        "ports": [{"name": "pytorchjob-port", "containerPort": MASTER_PORT}],
        "resources": pod_resources(plan),
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}, *mounts, *req.volume_mounts],
    }
    if req.capabilities:
        container["securityContext"] = {"capabilities": {"add": sorted(req.capabilities)}}
    node_selector, tolerations = _placement(plan)
    pod: dict[str, Any] = {
        "nodeSelector": node_selector,
        "tolerations": tolerations,
        "terminationGracePeriodSeconds": 120,   # AWS gives 2 minutes' notice: use it to checkpoint
        "containers": [container, *req.sidecars],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": req.shm_size}},
                    *volumes, *req.volumes],
    }
    if req.init_containers:
        pod["initContainers"] = req.init_containers
    if plan.spot:
        # Prefer spot pools; the on-demand fallback pool is used when spot has no capacity.
        pod["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "preference": {"matchExpressions": [
                {"key": CAPACITY_LABEL, "operator": "In", "values": ["spot"]}]}}]}}
    meta: dict[str, Any] = {"labels": labels(plan)}
    if req.annotations:
        meta["annotations"] = dict(req.annotations)
    return {"metadata": meta, "spec": pod}


def budget_deadline_seconds(plan: "Plan") -> int | None:
    """activeDeadlineSeconds: the job stops once the budget would be spent at the planned rate."""
    budget = plan.spec.budget.max_usd
    rate = plan.cost.spot_usd_per_hour if plan.spot else plan.cost.on_demand_usd_per_hour
    if not budget or not rate:
        return None
    return max(60, int(budget / rate * 3600))


def pytorch_job(plan: "Plan", volumes: list[dict], mounts: list[dict]) -> dict[str, Any]:
    spec = plan.spec
    template = _pod_template(plan, volumes, mounts)
    run_policy: dict[str, Any] = {
        "cleanPodPolicy": "Running",            # finished pods stay for `reclaunch logs`
        "ttlSecondsAfterFinished": TTL_AFTER_FINISHED,
        "backoffLimit": spec.job.max_restarts,
    }
    deadline = budget_deadline_seconds(plan)
    if deadline:
        run_policy["activeDeadlineSeconds"] = deadline
    job_spec: dict[str, Any] = {"runPolicy": run_policy, "nprocPerNode": str(plan.gpus_per_node)}
    if plan.spot:
        # Elastic: workers only, c10d rendezvous; a reclaimed node re-joins or the job
        # carries on with >= min nodes from the last checkpoint. A model-parallel plan has
        # min = max (planner.core): its sharded tables are laid out for one world size.
        job_spec["elasticPolicy"] = {
            "rdzvBackend": "c10d", "minReplicas": plan.min_nodes, "maxReplicas": plan.max_nodes,
            "maxRestarts": spec.job.max_restarts,
        }
        job_spec["pytorchReplicaSpecs"] = {
            "Worker": {"replicas": plan.nodes, "restartPolicy": "OnFailure", "template": template}}
    else:
        replicas = {"Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": template}}
        if plan.nodes > 1:
            replicas["Worker"] = {"replicas": plan.nodes - 1, "restartPolicy": "OnFailure",
                                  "template": copy.deepcopy(template)}
        job_spec["pytorchReplicaSpecs"] = replicas
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": _meta(plan, plan.name), "spec": job_spec}


def _placement(plan: "Plan") -> tuple[dict[str, str], list[dict[str, Any]]]:
    """(nodeSelector, tolerations) that land a pod on this cluster's GPU pools."""
    node_selector = {CLUSTER_LABEL: plan.name}
    if plan.instance_type:
        node_selector["node.kubernetes.io/instance-type"] = plan.instance_type
    tolerations = [dict(GPU_TOLERATION)]
    if plan.spot:
        tolerations.extend(dict(t) for t in SPOT_TOLERATIONS)
    return node_selector, tolerations


def preflight_job(plan: "Plan", *, max_bytes: str = "8G") -> dict[str, Any]:
    """The NCCL all-reduce check for this plan: every GPU of every node, the job's own image,
    fabric profile and nccl.env, scheduled exactly where the training pods will run."""
    from reclaunch.manifests.preflight import nccl_tests_job

    node_selector, tolerations = _placement(plan)
    return nccl_tests_job(f"{plan.name}-nccl", plan.spec.namespace,
                          plan.spec.job.image or LOCAL_IMAGE, plan.nodes, plan.gpus_per_node,
                          fabric_profile(plan), cluster_name=plan.name,
                          user_env=dict(plan.spec.nccl.env), max_bytes=max_bytes,
                          labels=labels(plan),
                          node_selector=node_selector, tolerations=tolerations)


def render(plan: "Plan") -> list[dict[str, Any]]:
    """Every object to apply, in apply order."""
    from reclaunch.manifests.env import sharding_json

    objs, volumes, mounts = _storage(plan)
    plan_json = json.dumps(plan.to_json(per_rank=False), indent=1, sort_keys=True, default=str)
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(plan, plan.spec.namespace, False)},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(plan, f"{plan.name}-plan"),
         "data": {"plan.json": plan_json, "sharding.json": sharding_json(plan, indent=1)}},
        *objs,
        pytorch_job(plan, volumes, mounts),
    ]


def to_yaml(objs: list[dict[str, Any]]) -> str:
    """YAML documents, `kubectl apply -f`-ready: no anchors/aliases, keys in render order."""
    import yaml

    class NoAliases(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:
            return True

    return yaml.dump_all(objs, Dumper=NoAliases, sort_keys=False, default_flow_style=False,
                         width=100)


def file_name(index: int, obj: dict[str, Any]) -> str:
    return f"{index:02d}-{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"
