"""Intra-node all_reduce bus bandwidth of an instance, from what its catalog row says it has.

The catalog row states the GPUs' link: `intra_node` (nvlink | pcie), the NVLink generation and
its GB/s per GPU (instance_types.csv, from the vendors' instance pages). The bandwidth the
planner uses follows from that fact alone, never from the instance's name: an 8-GPU HGX board
and a 2- or 4-GPU slice of one (GCP a2/a3-highgpu-2g/4g) both give each GPU its full NVLink
bandwidth through the NVSwitch, and nccl-tests busbw is per GPU, so they share the board's
measured figure; an NVLink bridge between two PCIe cards (Azure NC H100 v5: 600 GB/s per GPU)
has its own measured figure, far below a board's.
"""

from __future__ import annotations

from typing import NamedTuple

from reclaunch.fabric.profiles import HGX_A100, HGX_H100, PCIE_GEN4

# HGX B200 all_reduce busbw: HGX H100's measured 478.9 scaled by NVLink bandwidth (NVLink5 1800 vs
# NVLink4 900 GB/s per GPU). Not measured.
HGX_B200 = HGX_H100 * 1800 / 900
_AZ = "Azure/AI-benchmarking-guide (nccl-tests all_reduce, 1 node, 8 GB), fabrics.md"


class Intra(NamedTuple):
    busbw_gbs: float
    basis: str          # what the figure stands on
    measured: bool = True


# (NVLink generation, NVLink GB/s per GPU) -> the all_reduce busbw of GPUs joined that way.
NVLINK: dict[tuple[str, float], Intra] = {
    ("NVLink3", 600.0): Intra(HGX_A100, f"measured on HGX A100 (NVSwitch): {_AZ}"),
    # ND H200 v5 measured 480.0 on the same NVLink4 board: the same figure within 0.3%.
    ("NVLink4", 900.0): Intra(HGX_H100, f"measured on HGX H100 (NVSwitch): {_AZ}"),
    # Two H100 PCIe cards on an NVLink bridge (600 GB/s per GPU), all_reduce_perf -g 2, 1-4 GB:
    # busbw 115.4-116.3 GB/s (NVIDIA/nccl-tests issue 194, 2024-01-27). H100 NVL (Azure NC H100
    # v5) pairs use the same bridge.
    ("NVLink4", 600.0): Intra(116.0, "measured on 2 x H100 PCIe with an NVLink bridge: "
                              "NVIDIA/nccl-tests issue 194 (2024-01-27)"),
    ("NVLink5", 1800.0): Intra(HGX_B200, "derived, not measured: HGX H100's measured busbw x "
                               "1800/900 GB/s per GPU (NVLink5)", False),
}
# PCIe-only boards (A10G, L4, L40S, A100/H100 PCIe without a bridge): not measured. Gen4 x16 is
# ~25 GB/s per direction and rings cross the CPU root complex (often the socket link too).
PCIE = Intra(PCIE_GEN4, "PCIe only: 10 GB/s floor (Gen4 x16 ~25 GB/s per direction, rings "
             "through the CPU root complex; not measured)", False)


def of_offer(offer) -> Intra | None:
    """The intra-node figure for a catalog row (Offer or instance facts), or None when the row
    names an NVLink this table does not know (a registered cloud's own hardware: its fabric
    profile's member figure applies)."""
    if getattr(offer, "intra_node", None) != "nvlink":
        return PCIE
    return NVLINK.get((str(offer.nvlink), float(offer.nvlink_gbs_per_gpu)))
