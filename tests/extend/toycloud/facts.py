"""Everything reclaunch's pure layers need of the toy cloud and its fabric."""

from fractions import Fraction

from reclaunch.clouds import ETHERNET, NO_STORAGE, PVC, CloudFacts, FabricFacts

TOYFAB = FabricFacts("toyfab", nic="toynic", mtu=9000,
                     prerequisites=("toyfab: enable the toy fabric on the account",),
                     profiles="toycloud.fabric:PROFILES")

FACTS = CloudFacts(
    name="toy", kind="kube", provider="toycloud.provider", stack="toycloud.stack",
    storage=(PVC, NO_STORAGE), fabrics=(TOYFAB, ETHERNET),
    spot_tolerations=({"key": "toy.example/spot", "operator": "Equal", "value": "true",
                       "effect": "NoSchedule"},),
    capacity_labels={"toy.example/capacity": {"spot": "spot", "regular": "on-demand"}},
    allocatable={"source": "toy: 6% of cores, 10% of memory",
                 "cpu_tiers": ((None, Fraction(6, 100)),),
                 "memory_tiers": ((None, Fraction(10, 100)),), "eviction_mib": 100},
    system_shapes={"toy-small": (4, 16)},
    planner={"reclaim_rate_per_node_hour": 0.001, "control_plane_usd_per_hour": 0.05,
             "pvc_usd_per_gb_month": 0.07},
    offers="offers.csv",
)
