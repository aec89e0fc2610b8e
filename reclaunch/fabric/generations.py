"""Fabric profiles of the instance generations added for issue 27 (G6 with EFA, P6-B200, A4).

New rows of the fabric table, kept apart from profiles.py (module size) but part of the same one
table: reclaunch.fabric reads PROFILES from here, the base rows followed by these. P6 and A4 take
their vendor settings from the P5 and A3 Ultra rows (same plugin, env and pod requirements), so
an edit to those rows reaches them too.
"""

from __future__ import annotations

from reclaunch.fabric.intra import HGX_B200
from reclaunch.fabric.profiles import (
    PCIE_GEN4, PROFILES as BASE, FabricProfile, Member, _EFA_SOURCE, _GKE_SOURCE, _ro)


def _by_name(name: str) -> FabricProfile:
    return next(p for p in BASE if p.name == name)


PROFILES: tuple[FabricProfile, ...] = BASE + (
    # G6 with EFA (g6.8xlarge and up): one EFA device, no GPUDirect RDMA, like the other G parts
    # (efa-g's vendor settings, NCCL_NET and the fork-safe hugepage setting included; a 25 Gbps
    # link instead of 100).
    _by_name("efa-g")._replace(
        name="efa-g6",
        members=(Member("g6.", PCIE_GEN4, 1.5625, 1.25, _ro({"vpc.amazonaws.com/efa": 1})),),
        source=_EFA_SOURCE + "; EC2 accelerated computing specs (G6: EFA on g6.8xlarge+)",
        link_gbps=25, inter_node_busbw_gbs=1.5625, busbw_threshold_gbs=1.25,
        notes="not measured: 0.5 x the 25 Gbps link (no GPUDirect RDMA, host bounce) = 1.5625 GB/s, "
              "as efa-g derives its figures (no RDMA read on these parts)."),
    # P6-B200: 8 x 400 Gbps EFAv4 with GPUDirect RDMA, the same 3200 Gbps per node as P5.
    _by_name("efa-p5")._replace(
        name="efa-p6", members=(Member("p6-b200.", HGX_B200),),
        source=_EFA_SOURCE + "; EC2 accelerated computing specs (P6-B200: 8 x 400 Gbps EFAv4)",
        resources=_ro({"vpc.amazonaws.com/efa": 8}), measured_2node_busbw_gbs=None,
        threshold_basis="derived, not measured: p5's 0.8 x 437.8 GB/s (same 3200 Gbps per "
                        "node, 8 x 400 Gbps EFAv4)",
        notes="not measured: reuses p5's inter-node figures (same per-node link rate); the "
              "intra-node figure is HGX_B200, derived (see above). aws-ofi-nccl (>= 1.14, in the "
              "EFA installer) carries the P6 platform settings; env is efa-p5's."),
    # A4 (B200): the same RoCE GPUDirect RDMA through the gIB NCCL plugin as A3 Ultra
    # (GoogleCloudPlatform/cluster-toolkit examples/gke-a4 and container-engine-accelerators
    # gpudirect-rdma: one nccl-rdma-installer and set_nccl_env.sh for a3-ultragpu and a4-highgpu).
    _by_name("gcp-rdma")._replace(
        name="gcp-rdma-a4", members=(Member("a4-highgpu-", HGX_B200),),
        source=_GKE_SOURCE.format("gpudirect-rdma") + "; cluster-toolkit examples/gke-a4",
        notes="not measured: inter-node derived as 0.8 x the 3200 Gbps link (400 GB/s), as for "
              "A3 Ultra; intra-node HGX_B200 derived. env mirrors set_nccl_env.sh (gIB)."),
)
