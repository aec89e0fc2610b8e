"""cloud: local (torchrun on this machine): the facts the pure layers need, as data."""

from reclaunch.clouds import GLOO, CloudFacts

FACTS = CloudFacts(
    # Runs on this machine: no catalog offer, no region, gloo over loopback. It takes the
    # clouds' DNS-1035 name rule: it is the rehearsal for a cloud, and its name must survive
    # the move.
    name="local", kind="here", aliases=("localhost", "laptop", "here"), provider="reclaunch.providers.local",
    storage=("hostpath", "bucket", "none"),
    fabrics=(GLOO,),
    planner={"reclaim_rate_per_node_hour": 0.0, "control_plane_usd_per_hour": 0.0,
             "pvc_usd_per_gb_month": 0.0},
)
