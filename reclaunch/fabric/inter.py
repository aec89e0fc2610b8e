"""Inter-node all_reduce bus bandwidth of an instance: its fabric profile's figure, capped by
what the instance's own network can carry.

A fabric profile's inter-node figure belongs to a family (an EFA generation, an InfiniBand
rail layout, plain TCP); the catalog row states the instance's own network (`network_gbps`,
from the vendors' instance pages, and whether it has GPUDirect RDMA). A small instance of a
family cannot move more than its NIC: a 1-GPU g6.2xlarge (5 Gbps) is not a 100 Gbps node, and
plain TCP's 4 GB/s (measured on a3-mega's 200 Gbps NIC) is more than a 5 Gbps link holds. So
the figure the planner uses is

    min(profile figure, network_gbps / 8 x efficiency)

with the efficiency of the way the bytes travel: 1.0 with GPUDirect RDMA (the profiles'
at-scale figures already are the link rate: fabrics.md, a 2-node nccl-tests busbw above it
comes from NCCL's tree at 2 nodes), 0.5 without it (every byte bounces through host memory:
the efa-g profiles derive their figures the same way, fabric/profiles.py).
"""

from __future__ import annotations

from typing import NamedTuple

# Fraction of the NIC's line rate an inter-node collective gets, by path (see above).
NIC_EFFICIENCY = {True: 1.0, False: 0.5}


class Inter(NamedTuple):
    busbw_gbs: float
    basis: str              # what the figure stands on
    nic_bound: bool         # the instance's NIC, not the fabric family, sets it


def nic_cap_gbs(offer) -> float | None:
    """GB/s the instance's own network carries for a collective, or None when the row does not
    say (a registered cloud's row without network_gbps)."""
    gbps = float(getattr(offer, "network_gbps", 0) or 0)
    if gbps <= 0:
        return None
    return gbps / 8.0 * NIC_EFFICIENCY[bool(getattr(offer, "gpudirect", False))]


def of_offer(profile_gbs: float, offer) -> Inter:
    """The inter-node figure for a catalog row (Offer or instance facts) whose fabric profile
    gives `profile_gbs`."""
    cap = nic_cap_gbs(offer) if offer is not None else None
    if cap is None or profile_gbs <= cap:
        return Inter(float(profile_gbs), "the fabric profile's figure", False)
    how = "GPUDirect RDMA" if getattr(offer, "gpudirect", False) else "no GPUDirect RDMA: x0.5"
    return Inter(cap, f"the instance's {float(offer.network_gbps):g} Gbps network ({how})", True)
