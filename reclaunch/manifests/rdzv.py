"""The elastic rendezvous store, hosted where a spot reclaim cannot take it.

With `elasticPolicy` and no rdzvHost, the training operator points every agent at
`<job>-worker-0` (kubeflow/training-operator v1.9 pkg/controller.v1/pytorch/elastic.go,
generateEnvRDZVEndpoint), so worker-0's torchrun hosts the c10d TCPStore and reclaiming that
one node ends the whole job. The operator's elastic examples run the store elsewhere
(examples/pytorch/elastic/etcd.yaml: an etcd Pod + Service). We run a TCPStore server pod on
the system pool (on-demand capacity) behind a Service and set rdzvHost/rdzvPort to it: agents
whose hostname is not the endpoint's connect as clients (torch c10d_rendezvous_backend
_create_tcp_store; is_host=false makes that explicit), and each rendezvous round elects its
own rank 0 for the workers' store, so any worker can go.

The store runs the job's own image (it has torch; the TCPStore protocol needs no other
server), so the system pool pulls that image once. The store only holds rendezvous keys:
losing it restarts the rendezvous from the last checkpoint, it does not lose training state.
"""

from __future__ import annotations

from typing import Any

from reclaunch.tags import CLUSTER_TAG, POOL_LABEL

PORT = 29400                     # torchrun's default c10d rendezvous port
ROLE = "rendezvous"
STORE_SCRIPT = (
    "import time, torch.distributed as dist\n"
    f"store = dist.TCPStore('0.0.0.0', {PORT}, is_master=True, wait_for_workers=False)\n"
    f"print('reclaunch rendezvous store listening on :{PORT}', flush=True)\n"
    "while True:\n    time.sleep(3600)\n")


def store_name(cluster: str) -> str:
    return f"{cluster}-rdzv"


def endpoint(cluster: str, namespace: str) -> tuple[str, int]:
    return f"{store_name(cluster)}.{namespace}.svc", PORT


def elastic_fields(cluster: str, namespace: str) -> dict[str, Any]:
    """What the PyTorchJob's elasticPolicy adds so agents rendezvous on the store."""
    host, port = endpoint(cluster, namespace)
    return {"rdzvHost": host, "rdzvPort": port, "rdzvId": cluster,
            "rdzvConf": [{"key": "is_host", "value": "false"}]}


def store_objects(cluster: str, namespace: str, image: str,
                  labels: dict[str, str]) -> list[dict[str, Any]]:
    """Service + Deployment (1 replica) of the store, on the cluster's system pool."""
    name = store_name(cluster)
    selector = {CLUSTER_TAG: cluster, "reclaunch-role": ROLE}
    meta = {"name": name, "namespace": namespace, "labels": {**labels, **selector}}
    container = {
        "name": "store", "image": image, "imagePullPolicy": "IfNotPresent",
        "command": ["python3", "-c", STORE_SCRIPT],
        "ports": [{"name": "rdzv", "containerPort": PORT}],
        # importing torch is most of the footprint; the keys themselves are tiny
        "resources": {"requests": {"cpu": "250m", "memory": "1Gi"},
                      "limits": {"memory": "2Gi"}},
        "readinessProbe": {"tcpSocket": {"port": PORT}, "periodSeconds": 5},
    }
    pod = {"nodeSelector": {CLUSTER_TAG: cluster, POOL_LABEL: "system"},
           "terminationGracePeriodSeconds": 5, "containers": [container]}
    return [
        {"apiVersion": "v1", "kind": "Service", "metadata": dict(meta),
         "spec": {"selector": dict(selector),
                  "ports": [{"name": "rdzv", "port": PORT, "targetPort": PORT}]}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": dict(meta),
         "spec": {"replicas": 1, "strategy": {"type": "Recreate"},
                  "selector": {"matchLabels": dict(selector)},
                  "template": {"metadata": {"labels": {**labels, **selector}}, "spec": pod}}},
    ]
