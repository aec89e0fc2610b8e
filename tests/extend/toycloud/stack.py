"""The toy cloud's stack: its facts (stacks.StackFacts, pure like stacks/<cloud>/pools.py),
its policy rules, its dated Kubernetes minors and a Pulumi program of toy resources (generic CustomResources, which
`reclaunch preview` runs under Pulumi's mocks)."""

from stacks import common as c
from stacks.policy import owns_only


def node_pools(plan):
    fab = c.fabric_facts(plan)
    system = c.NodePool(name="system", role="system", instance_type="toy-small", spot=False,
                        labels={**c.KUBELET_LABELS, c.CLUSTER_TAG: plan.name,
                                c.POOL_LABEL: "system"},
                        taints=[], min_nodes=2, max_nodes=3, desired=2)
    out = [system]
    for pool in c.gpu_pools(plan):
        labels = {**c.KUBELET_LABELS, **c.node_labels(plan, pool),
                  c.FABRIC_GROUP_LABEL: fab.nic or "none",
                  "node.kubernetes.io/instance-type": plan.instance_type}
        taints = [dict(c.GPU_TAINT)]
        if pool.capacity == "spot":
            taints.append({"key": "toy.example/spot", "value": "true", "effect": "NoSchedule"})
        out.append(c.NodePool(name=pool.key, role="gpu", instance_type=plan.instance_type,
                              spot=pool.capacity == "spot", labels=labels, taints=taints,
                              min_nodes=pool.min_nodes, max_nodes=pool.max_nodes,
                              desired=pool.desired, priority=pool.priority))
    return out


def job_placement(plan):
    return {"node_selector": {}, "tolerations": []}


def manual_prerequisites(plan):
    out = list(c.fabric_facts(plan).prerequisites)
    if plan.spec.capacity is not None:
        out.append(f"toy reservation {plan.spec.capacity.reservation}: buy it in the toy console")
    return out


def pod_identity(plan):
    return {"labels": {"toy.example/identity": "bucket"}, "env": {}}


def _private_api(plan, rs):
    return [f"{r['name']}: toy API public" for r in rs
            if r["type"] == "toy:index:Cluster" and r["inputs"].get("publicApi") is not False]


def _encrypted(plan, rs):
    return [f"{r['name']}: toy file system not encrypted" for r in rs
            if r["type"] == "toy:index:FileSystem" and r["inputs"].get("encrypted") is not True]


def _nothing(plan, rs):   # the toy has no SSH, IAM, auto-upgrade or bucket of its own
    return []


def policy_rules():
    return {"control-plane-private": _private_api, "no-world-ssh": _nothing,
            "volumes-encrypted": _encrypted, "scoped-iam": _nothing,
            "gpu-pools-pinned": _nothing, "bucket-private": _nothing,
            "bucket-scoped": _nothing, "bucket-keeps-checkpoints": _nothing,
            # nothing imported unless retained; the toy has no bucket resource type
            "owned-storage": lambda plan, rs: owns_only(plan, rs, ())}


def api_refusals(typ, name, inputs):   # nothing the toy API refuses beyond its SDK's types
    return []


def kubernetes_minors():
    import datetime as dt

    return {"as_of": dt.date(2026, 11, 1), "source": "the toy's release notes (a test's stand-in)",
            "minors": [{"minor": "1.35", "end": dt.date(2027, 1, 1)},
                       {"minor": "1.36", "end": dt.date(2027, 6, 1)}]}


def program(plan):
    import pulumi

    from stacks.versions import kubernetes_version

    tags = c.tags(plan)
    net = pulumi.CustomResource("toy:index:Network", c.name(plan, "net"), {"tags": tags})
    cluster = pulumi.CustomResource("toy:index:Cluster", c.name(plan, "cluster"), {
        "network": net.id, "publicApi": False, "version": kubernetes_version(plan), "tags": tags})
    for pool in node_pools(plan):
        pulumi.CustomResource("toy:index:NodePool", c.name(plan, pool.name), {
            "cluster": cluster.id, "instanceType": pool.instance_type, "minSize": pool.min_nodes,
            "maxSize": pool.max_nodes, "tags": tags})
    if plan.spec.storage.kind == "toyfs":
        from reclaunch.planner.storage_size import billed_gib

        pulumi.CustomResource("toy:index:FileSystem", c.name(plan, "toyfs"), {
            "sizeGib": int(billed_gib("toyfs", plan.spec.storage.size)), "encrypted": True,
            "tags": tags})
