"""The toy cloud's stack facts (stacks.StackFacts), pure like stacks/<cloud>/pools.py."""

from stacks import common as c


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
    return list(c.fabric_facts(plan).prerequisites)


def pod_identity(plan):
    return {"labels": {"toy.example/identity": "bucket"}, "env": {}}
