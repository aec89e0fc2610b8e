"""cloud: kubernetes (a cluster the team already has): the facts the pure layers need, as data.

No stack and no region: the offers are the cluster's own nodes (offers.py), read through the
API at plan time. The vendors' fabric profiles apply to its nodes by instance type
(fabric._match, kind "own"), so it declares only the generic fabric of its own.
"""

from reclaunch.clouds import CEPHFS, ETHERNET, NO_STORAGE, PVC, CloudFacts

# Time to first step (planner/startup.py): a cluster you already have; its nodes run (and
# bill) anyway.
STARTUP = {"steps": []}


FACTS = CloudFacts(
    name="kubernetes", kind="own", aliases=("k8s", "kube", "onprem", "on-prem"),
    # A PVC the cluster's storage class provides, CephFS the team runs, or nothing; no stack
    # creates a file system on a cluster we did not make.
    storage=(CEPHFS, PVC, NO_STORAGE),
    fabrics=(ETHERNET,),
    # The node's status.allocatable is read from the API, from which the kubelet already took
    # its reserves (providers/kubernetes/offers.py): nothing more is taken off.
    allocatable={"source": "the node's status.allocatable, read from the cluster's API",
                 "capacity_overhead": {"fixed_mib": 0, "fraction": 0}, "eviction_mib": 0},
    # Already paid for or priced by the team (kubernetes.price); spot is refused on this target
    # (spec/kubernetes.py), so no reclaim rate; a PVC is billed wherever the cluster runs.
    planner={"reclaim_rate_per_node_hour": 0.0, "control_plane_usd_per_hour": 0.0,
             "pvc_usd_per_gb_month": 0.0, "startup": STARTUP},
    pip_extra="k8s", sdk_modules=("kubernetes",),
)
