"""The toy fabric's NCCL profile (reclaunch.fabric reads it through FabricFacts.profiles)."""

from types import MappingProxyType

from reclaunch.fabric import FabricProfile, Member

PROFILES = (
    FabricProfile(
        name="toyfab-x", fabric="toyfab", members=(Member("toy-gpu", 300.0),),
        source="toy", date="2026-11",
        env=MappingProxyType({"NCCL_TOY_FABRIC": "1", "NCCL_SOCKET_IFNAME": "^lo"}),
        resources=MappingProxyType({"toy.example/nic": 1}),
        transport="NET/Toy", link_gbps=400, inter_node_busbw_gbs=40.0,
        busbw_threshold_gbs=32.0),
)
