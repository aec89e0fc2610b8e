"""The fabric table: NCCL / libfabric settings and pod requirements per inter-node fabric.

Data only. Every profile names its source and the month it was gathered (see
../shared/reference/fabrics.md); vendors revise these often, so a change is one edit here and
`nccl.env` in cluster.yaml overrides any value. No profile sets NCCL_ALGO: NCCL picks the
algorithm per size and topology, and forcing it (the seed article's advice) shuts out NVLS/PAT.

Bandwidth figures are all_reduce *bus* bandwidth in GB/s (nccl-tests busbw):
- `measured_2node_busbw_gbs`: the 2-node nccl-tests figure from fabrics.md, or None.
- `inter_node_busbw_gbs`: what the planner should use at scale. Measured 2-node figures can
  exceed the link rate (NCCL's Tree at 2 nodes moves less data over the network than the busbw
  formula assumes), so the at-scale figure is min(measured, link rate); unmeasured fabrics are
  derived conservatively from the link rate, and `notes` says so.
- `busbw_threshold_gbs`: the 2-node preflight floor: 0.8 x measured, a vendor's own fault line,
  or 0.8 x the derived figure. preflight.threshold_for() scales it for 1 node and >= 3 nodes.
"""

from types import MappingProxyType
from typing import Any, Mapping, NamedTuple

from reclaunch.fabric import tcpx, tcpxo
from reclaunch.fabric.topology import FILE_NAME as TOPO_FILE, MOUNT_DIR as TOPO_DIR

DATE = "2026-11"
_NONE: Mapping[str, Any] = MappingProxyType({})   # mapping fields' default (read-only: one for all)

# Intra-node all_reduce busbw, 1 node, 8 GB (fabrics.md, Azure/AI-benchmarking-guide). The same
# HGX boards sit in every cloud's instance, so the Azure figure stands for AWS and GCP too.
HGX_A100 = 231.6   # ND A100 v4
HGX_H100 = 478.9   # ND H100 v5
HGX_H200 = 480.0   # ND H200 v5
# PCIe-only boards (A10G, L40S, L4, A100 PCIe): not measured. Gen4 x16 is ~25 GB/s per direction
# and rings cross the CPU root complex (and often the socket link), so 10 GB/s is a safe floor.
PCIE_GEN4 = 10.0


def _ro(d: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    return MappingProxyType(dict(d or {}))


# Rows are NamedTuples, not frozen dataclasses: as immutable, a quarter of the cost to create at
# import (issue 25: `plan` loads this table); a changed copy is `row._replace(...)`. No `from
# __future__ import annotations` in this module: NamedTuple would compile each string annotation.
class Member(NamedTuple):
    """One instance family of a profile, with what differs between families."""

    prefix: str                              # matched against the instance type (case-insensitive)
    intra_node_busbw_gbs: float
    inter_node_busbw_gbs: float | None = None    # None: the profile's figure
    busbw_threshold_gbs: float | None = None     # None: the profile's figure
    resources: Mapping[str, Any] | None = None   # None: the profile's device resources


class FabricProfile(NamedTuple):
    """One fabric's row: NCCL env, pod requirements, bandwidth figures and their sources."""
    name: str
    # A fabric of the cloud facts (FabricFacts); serves every cloud declaring it (`clouds`).
    fabric: str                       # efa | infiniband | tcpx | tcpxo | rdma | ethernet | gloo
    members: tuple[Member, ...]
    source: str
    date: str
    env: Mapping[str, str]            # NCCL_* / FI_* / CUDA_* for the training container
    pod_env: Mapping[str, str] = _NONE   # non-NCCL (LD_LIBRARY_PATH ...)
    env_script: str | None = None     # the vendor's env script in the image/host, the authority
    resources: Mapping[str, Any] = _NONE  # device resources per pod (limits)
    hugepages: Mapping[str, str] = _NONE
    capabilities: tuple[str, ...] = ()
    annotations: Mapping[str, str] = _NONE
    # GKE multi-NIC: (interface, network-name template); "{cluster}" is the cluster name.
    gke_interfaces: tuple[tuple[str, str], ...] = ()
    device_annotation_container: str | None = None  # devices.gke.io/container.<name>
    extra_devices: tuple[str, ...] = ()              # besides /dev/nvidia<i> in that annotation
    sidecars: tuple[Mapping[str, Any], ...] = ()      # regular containers
    init_containers: tuple[Mapping[str, Any], ...] = ()  # native sidecars (restartPolicy Always)
    volumes: tuple[Mapping[str, Any], ...] = ()
    volume_mounts: tuple[Mapping[str, Any], ...] = ()  # for the training container
    exit_file: str | None = None      # touch on exit so a non-native sidecar stops too
    # Directories the launch command prepends to the image's LD_LIBRARY_PATH (a pod `env`
    # entry would replace the image's value, and Kubernetes cannot expand the image's env).
    ld_library_path: tuple[str, ...] = ()
    topology: str | None = None       # NCCL topology file (fabric.topology) shipped as ConfigMap
    gdr_fix: str = ""                 # what to check when NCCL ran without GPUDirect RDMA
    shm_size: str = "64Gi"
    transport: str | None = None      # token NCCL_DEBUG=INFO prints for this fabric
    link_gbps: float = 0.0            # per-node inter-node link rate, Gbit/s
    gpudirect: bool = False
    measured_2node_busbw_gbs: float | None = None
    inter_node_busbw_gbs: float = 0.0
    busbw_threshold_gbs: float = 0.0
    threshold_basis: str = ""
    # The nccl-tests collective the threshold was measured with; the preflight runs that one
    # (a floor from all_gather busbw says nothing about all_reduce busbw).
    threshold_collective: str = "all_reduce"
    fallback_fix: str = ""            # what to fix when NCCL fell back to sockets
    low_busbw_fix: str = ""           # what to check when busbw is under the threshold
    notes: str = ""
    instance_type: str | None = None  # this and the next two: set on what profile_for() returns
    intra_node_busbw_gbs: float = 0.0
    warning: str | None = None

    @property
    def clouds(self) -> tuple[str, ...]:
        """The targets that offer this profile's fabric (their facts say so)."""
        from reclaunch import clouds

        return clouds.clouds_with_fabric(self.fabric)


def _host(name: str, path: str) -> Mapping[str, Any]:
    return _ro({"name": name, "hostPath": {"path": path}})


def _mount(name: str, path: str, read_only: bool = False) -> Mapping[str, Any]:
    return _ro({"name": name, "mountPath": path, **({"readOnly": True} if read_only else {})})


# NCCL_NET pins the aws-ofi-nccl net: without a pin, an image lacking the plugin or libfabric
# silently runs NCCL on sockets; with it, NCCL init stops with the net missing. "AWS Libfabric"
# is the name every plugin version answers to: 1.11 and older call their net that, newer ones
# "Libfabric" and rename it to "AWS Libfabric" when NCCL_NET asks for it
# (aws/aws-ofi-nccl@02a874d src/nccl_ofi_interface_nvidia.cpp nvidia_plugin_name_fixup).
# FI_EFA_USE_HUGE_PAGE=0: aws-ofi-nccl doc/efa-env-var.md, needed when PyTorch data-loader
# workers fork (else os.fork() "Cannot allocate memory" once huge pages run out); the
# reference trainer forks loader workers. libfabric then takes its buffers from ordinary pages,
# so no EFA pod requests hugepages (the EKS examples' 5120Mi would sit unused per node); the
# node image's boot-time pages still come off its memory (the efa fabric's boot_hugepages).
# NCCL_TUNER_PLUGIN is not set: the plugin sets it to its own library itself
# (src/platform-aws.cpp), and skips that when it is already set.
# FI_EFA_USE_DEVICE_RDMA is not set: "do not set for libfabric>=1.18.0 and aws-ofi-nccl>=1.7.0"
# (doc/efa-env-var.md), which find RDMA read themselves; an older plugin needs it in nccl.env.
_EFA_NET = {"NCCL_NET": "AWS Libfabric", "FI_EFA_USE_HUGE_PAGE": "0"}
_EFA_ENV = {"NCCL_SOCKET_IFNAME": "^lo,docker", **_EFA_NET}
# Where the EFA installer puts libfabric (/opt/amazon/efa/lib) and aws-ofi-nccl
# (/opt/amazon/ofi-nccl/lib[/x86_64-linux-gnu] since installer 1.29; /opt/aws-ofi-nccl/install/lib
# when built from source), plus a source-built NCCL: the paths every image of
# aws-samples/awsome-distributed-training puts on LD_LIBRARY_PATH
# (micro-benchmarks/nccl-tests/nccl-tests.Dockerfile, kubernetes/nccl-tests.yaml,
# 3.test_cases/megatron/*/Dockerfile). An image without them runs NCCL on sockets; the
# preflight reports that as a fallback with the plugin missing.
_EFA_LIBS = ("/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu", "/opt/amazon/ofi-nccl/lib",
             "/opt/aws-ofi-nccl/install/lib", "/opt/amazon/efa/lib", "/opt/nccl/build/lib")
_EFA_GDR = ("use aws-ofi-nccl >= 1.7 and libfabric >= 1.18 in the image (they use RDMA read on "
            "p4d/p5 unasked; an older plugin needs FI_EFA_USE_DEVICE_RDMA=1 in nccl.env), and "
            "request every EFA device of the node")
_EFA_SOURCE = "aws-ofi-nccl docs (efa-env-var.md, tuner.md); EKS user guide (node-efa)"
_EFA_FALLBACK = (
    "use an image with libfabric >= 1.18 (EFA installer, /opt/amazon/efa/lib) and the "
    "aws-ofi-nccl plugin (>= 1.7.3 on P5; /opt/amazon/ofi-nccl/lib or /opt/aws-ofi-nccl/install/"
    "lib, which the launch prepends to LD_LIBRARY_PATH); request "
    "vpc.amazonaws.com/efa in the pod (the EFA device plugin DaemonSet must run on the nodes); "
    "run the nodes in a cluster placement group with EFA-enabled security groups")
_EFA_LOW = ("check every EFA device is requested, the nodes share a cluster placement group, "
            "and the plugin/NCCL versions match; calibrate with >= 4 nodes")

# NCCL_NET_GDR_LEVEL and the topology file as Azure's AKS samples set them
# (Azure/aks-rdma-infiniband tests/scenarios/k8s/values.yaml ncclEnvVars: NCCL_NET_GDR_LEVEL=SYS;
# templates/mpi-job.yaml: NCCL_TOPO_FILE=/opt/nvidia-topology/topo.xml from a ConfigMap).
# NCCL_NET=IB (NCCL's built-in verbs net, src/transport/net_ib.cc): a pod without the HCAs
# or libibverbs then fails NCCL init instead of training on sockets.
# NCCL_IGNORE_CPU_AFFINITY=1 on every ND generation, as azhpc-images writes it into
# /etc/nccl.conf (components/customizations/ndv4.sh and ndv5.sh, 2026-07).
_AZ_ENV = {"NCCL_IB_PCI_RELAXED_ORDERING": "1", "NCCL_SOCKET_IFNAME": "eth0",
           "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "NCCL_NET_GDR_LEVEL": "SYS",
           "NCCL_TOPO_FILE": f"{TOPO_DIR}/{TOPO_FILE}", "NCCL_NET": "IB",
           "NCCL_IGNORE_CPU_AFFINITY": "1"}
_AZ_SOURCE = "Azure azhpc-images (ndv4.sh, ndv5.sh, nccl.conf); Azure/aks-rdma-infiniband"
# rdma/ib comes from the SR-IOV device plugin selecting InfiniBand links only, so the pod holds
# no other HCA and NCCL_IB_HCA is not set. A cluster using the shared-device plugin
# (rdma/shared_ib) shows the pod every mlx5 device, the Ethernet one too, on which NCCL fails:
# Azure's own test excludes it (aks-rdma-infiniband tests/.../rdma_test.sh: NCCL_IB_HCA=^mlx5_8).
_AZ_HCA = ("rdma/ib holds InfiniBand HCAs only (SR-IOV plugin, linkTypes infiniband): no "
           "NCCL_IB_HCA. With rdma/shared_ib set NCCL_IB_HCA in nccl.env to the IB devices "
           "(ibv_devinfo: link_layer InfiniBand), e.g. ^mlx5_8 as Azure's AKS test does.")
_AZ_FALLBACK = (
    "install the NVIDIA Network Operator (nodes labelled "
    "feature.node.kubernetes.io/pci-15b3.present=true) with the IB device plugin, request rdma/ib "
    "and add the IPC_LOCK capability; the cluster needs the AKSInfinibandSupport feature")
_AZ_GDR = ("load nvidia-peermem on the GPU nodes (the nvidia-peermem-reloader add-on of "
           "Azure/aks-rdma-infiniband) and keep NCCL_NET_GDR_LEVEL=SYS with the topology file")
_AZ_LOW = ("check the NCCL_TOPO_FILE ConfigMap is mounted, GPUDirect RDMA (nvidia-peermem) "
           "is loaded and every IB port is Active (ibstat); busbw under 180 GB/s on HDR is a "
           "node or link fault (Azure's own line): cordon the node and run the test pairwise")

_GKE_SOURCE = "GoogleCloudPlatform container-engine-accelerators ({}); cluster-toolkit"
_NVIDIA_LIBS = _host("nvidia-libs", "/home/kubernetes/bin/nvidia")
_NVIDIA_LIBS_MOUNT = _mount("nvidia-libs", "/usr/local/nvidia")
_SYS = (_host("sys", "/sys"), _host("proc-sys", "/proc/sys"))
_GKE_LD = ("/usr/local/nvidia/lib64",)   # prepended, as the vendors' env scripts do


def _gpu_nics(first: int, count: int, template: str, start: int = 1) -> tuple[tuple[str, str], ...]:
    return tuple((f"eth{first + i}", template.replace("{i}", str(start + i))) for i in range(count))


PROFILES: tuple[FabricProfile, ...] = (
    FabricProfile(
        name="efa-p4", fabric="efa",
        members=(Member("p4d.", HGX_A100), Member("p4de.", HGX_A100)),
        source=_EFA_SOURCE, date=DATE, env=_ro(_EFA_ENV),
        resources=_ro({"vpc.amazonaws.com/efa": 4}),
        transport="NET/OFI", link_gbps=400, gpudirect=True,
        measured_2node_busbw_gbs=78.3, inter_node_busbw_gbs=50.0, busbw_threshold_gbs=62.6,
        threshold_basis="0.8 x 78.3 GB/s (p4de, 2 nodes, 2 GiB; awsome-distributed-training)",
        fallback_fix=_EFA_FALLBACK, low_busbw_fix=_EFA_LOW,
        ld_library_path=_EFA_LIBS, gdr_fix=_EFA_GDR,
        notes="at-scale figure is the 400 Gbps link (50 GB/s): the 2-node 78.3 exceeds it. "
              "NCCL_SOCKET_IFNAME excludes lo/docker (pods name their interface eth0, so the "
              "host's 'en' prefix would not match); FI_PROVIDER, NCCL_PROTO, *_FORK_SAFE and "
              "NCCL_TOPO_FILE are obsolete or harmful and deliberately absent."),
    FabricProfile(
        name="efa-p5", fabric="efa",
        members=(Member("p5.", HGX_H100), Member("p5e.", HGX_H200)),
        source=_EFA_SOURCE, date=DATE,
        env=_ro(_EFA_ENV),
        resources=_ro({"vpc.amazonaws.com/efa": 32}),
        transport="NET/OFI", link_gbps=3200, gpudirect=True,
        measured_2node_busbw_gbs=437.8, inter_node_busbw_gbs=400.0, busbw_threshold_gbs=350.2,
        threshold_basis="0.8 x 437.8 GB/s (p5, 2 nodes EKS, 2 GiB; awsome-distributed-training)",
        fallback_fix=_EFA_FALLBACK, low_busbw_fix=_EFA_LOW,
        ld_library_path=_EFA_LIBS, gdr_fix=_EFA_GDR,
        notes="32 x 100 Gbps EFA. At-scale figure is the 3200 Gbps link (400 GB/s); Slurm "
              "measured 487.1 at 16 GiB. The OFI tuner (loaded by the plugin) is a no-op at "
              "<= 2 nodes."),
    FabricProfile(
        name="efa-p5en", fabric="efa",
        members=(Member("p5en.", HGX_H200),),
        source=_EFA_SOURCE, date=DATE,
        env=_ro(_EFA_ENV),
        resources=_ro({"vpc.amazonaws.com/efa": 16}),
        transport="NET/OFI", link_gbps=3200, gpudirect=True,
        measured_2node_busbw_gbs=None, inter_node_busbw_gbs=400.0, busbw_threshold_gbs=350.2,
        threshold_basis="derived, not measured: p5's 0.8 x 437.8 GB/s (same 3200 Gbps per "
                        "node, 16 x 200 Gbps EFA)",
        fallback_fix=_EFA_FALLBACK, low_busbw_fix=_EFA_LOW,
        ld_library_path=_EFA_LIBS, gdr_fix=_EFA_GDR,
        notes="not measured: reuses p5's figures because the per-node link rate is the same."),
    FabricProfile(
        name="efa-g", fabric="efa",
        # No GPUDirect RDMA: traffic bounces through host memory, so half the link rate.
        members=(Member("g5.12xlarge", PCIE_GEN4, 2.5, 2.0, _ro({"vpc.amazonaws.com/efa": 1})),
                 Member("g5.", PCIE_GEN4, 6.25, 5.0, _ro({"vpc.amazonaws.com/efa": 1})),
                 Member("g6e.48xlarge", PCIE_GEN4, 25.0, 20.0, _ro({"vpc.amazonaws.com/efa": 4})),
                 Member("g6e.", PCIE_GEN4, 6.25, 5.0, _ro({"vpc.amazonaws.com/efa": 1}))),
        source=_EFA_SOURCE, date=DATE,
        env=_ro({"NCCL_SOCKET_IFNAME": "^lo,docker", **_EFA_NET}),
        resources=_ro({"vpc.amazonaws.com/efa": 1}),
        transport="NET/OFI", link_gbps=100, gpudirect=False,
        inter_node_busbw_gbs=6.25, busbw_threshold_gbs=5.0,
        threshold_basis="0.8 x derived figure (not measured)",
        fallback_fix=_EFA_FALLBACK, low_busbw_fix=_EFA_LOW,
        ld_library_path=_EFA_LIBS, gdr_fix=_EFA_GDR,
        notes="not measured: inter-node derived as 0.5 x link rate (no GPUDirect RDMA, host "
              "bounce): 40 Gbps -> 2.5, 100 Gbps -> 6.25, 400 Gbps -> 25 GB/s. "
              "No RDMA read on these parts."),
    FabricProfile(
        name="azure-ib-v4", fabric="infiniband",
        members=(Member("Standard_ND96asr_v4", HGX_A100),
                 Member("Standard_ND96amsr_A100_v4", HGX_A100)),
        source=_AZ_SOURCE, date=DATE,
        env=_ro(_AZ_ENV), topology="ndv4", gdr_fix=_AZ_GDR,
        resources=_ro({"rdma/ib": 8}), capabilities=("IPC_LOCK",),
        transport="NET/IB", link_gbps=1600, gpudirect=True,
        measured_2node_busbw_gbs=187.2, inter_node_busbw_gbs=187.2, busbw_threshold_gbs=180.0,
        threshold_basis="Azure's own fault line: < 180 GB/s on HDR, 2 nodes, 8 GiB "
                        "(measured 187.2; Azure/aks-rdma-infiniband)",
        fallback_fix=_AZ_FALLBACK, low_busbw_fix=_AZ_LOW,
        notes=_AZ_HCA),
    FabricProfile(
        name="azure-ib-v5", fabric="infiniband",
        members=(Member("Standard_ND96isr_H100_v5", HGX_H100),
                 Member("Standard_ND96isr_H200_v5", HGX_H200)),
        source=_AZ_SOURCE, date=DATE,
        env=_ro(_AZ_ENV), topology="ndv5", gdr_fix=_AZ_GDR,
        resources=_ro({"rdma/ib": 8}), capabilities=("IPC_LOCK",),
        transport="NET/IB", link_gbps=3200, gpudirect=True,
        inter_node_busbw_gbs=320.0, busbw_threshold_gbs=256.0,
        threshold_basis="derived, not measured: 0.8 x 320 GB/s (0.8 x the 3200 Gbps link)",
        fallback_fix=_AZ_FALLBACK, low_busbw_fix=_AZ_LOW,
        notes="not measured: inter-node derived as 0.8 x the 3200 Gbps NDR link (400 GB/s). "
              "NCCL 2.18.1 + relaxed ordering + LL128 can corrupt data on HGX H100: use NCCL "
              ">= 2.18.3 or set NCCL_PROTO=^LL128 in nccl.env. " + _AZ_HCA),
    FabricProfile(
        name="gcp-tcpx", fabric="tcpx",
        members=(Member("a3-highgpu-", HGX_H100),),
        source=_GKE_SOURCE.format("gpudirect-tcpx"), date=DATE,
        env=tcpx.ENV, ld_library_path=_GKE_LD,
        annotations=_ro({"networking.gke.io/default-interface": "eth0"}),
        gke_interfaces=(("eth0", "default"),) + _gpu_nics(1, 4, "{cluster}-gpu-{i}"),
        device_annotation_container="tcpx-daemon",
        extra_devices=("/dev/nvidiactl", "/dev/nvidia-uvm"),
        sidecars=(_ro(tcpx.daemon_container(
            "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd-dev:v2.0.15")),),
        volumes=(_NVIDIA_LIBS, *_SYS, _ro({"name": "tcpx-socket", "emptyDir": {}}),
                 _ro({"name": "reclaunch-exit", "emptyDir": {}})),
        volume_mounts=(_NVIDIA_LIBS_MOUNT, _mount("tcpx-socket", tcpx.UDS_PATH),
                       _mount("reclaunch-exit", "/run/reclaunch")),
        exit_file=tcpx.EXIT_FILE,
        transport="NET/GPUDirectTCPX", link_gbps=1000, gpudirect=True,
        measured_2node_busbw_gbs=50.0, inter_node_busbw_gbs=50.0, busbw_threshold_gbs=40.0,
        threshold_basis="0.8 x ~50 GB/s (a3-highgpu, 2 nodes, all_gather 8 GiB; dstack)",
        threshold_collective="all_gather",
        fallback_fix=("run the tcpx-daemon (tcpgpudmarxd) sidecar sharing /run/tcpx with the "
                      "GPUs through the NRI device injector (devices.gke.io annotation), install "
                      "the GPUDirect-TCPX NCCL plugin with the nccl-tcpx-installer DaemonSet "
                      "(mounted from /home/kubernetes/bin/nvidia), and attach the 4 GPU NICs "
                      "through networking.gke.io/interfaces"),
        low_busbw_fix="check all 4 GPU NICs are attached and the tcpx-daemon log shows no errors",
        notes="the measured figure is all_gather busbw, so the preflight runs all_gather. The training "
              "command must touch exit_file on exit so the non-native sidecar stops."),
    FabricProfile(
        name="gcp-tcpxo", fabric="tcpxo",
        members=(Member("a3-megagpu-", HGX_H100),),
        source=_GKE_SOURCE.format("gpudirect-tcpxo") + "; NVIDIA aicr GKE TCPXO guide", date=DATE,
        env=tcpxo.ENV,
        pod_env=_ro({"NCCL_LIB_DIR": tcpxo.NCCL_LIB_DIR}), ld_library_path=(tcpxo.NCCL_LIB_DIR,),
        env_script=f"{tcpxo.NCCL_LIB_DIR}/nccl-env-profile.sh",
        annotations=_ro({"networking.gke.io/default-interface": "eth0"}),
        gke_interfaces=(("eth0", "default"),) + _gpu_nics(1, 8, "{cluster}-gpu-{i}"),
        device_annotation_container="tcpxo-daemon",
        extra_devices=("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/dmabuf_import_helper"),
        init_containers=(_ro(tcpxo.rxdm_container()),),
        volumes=(_NVIDIA_LIBS, *_SYS, _host("aperture-devices", "/dev/aperture_devices")),
        volume_mounts=(_NVIDIA_LIBS_MOUNT, _mount("aperture-devices", "/dev/aperture_devices")),
        transport="NET/FasTrak", link_gbps=1800, gpudirect=True,
        measured_2node_busbw_gbs=188.5, inter_node_busbw_gbs=188.5, busbw_threshold_gbs=150.8,
        threshold_basis="0.8 x 188.5 GB/s (a3-megagpu, 2 nodes, all_gather 8 GiB; dstack)",
        threshold_collective="all_gather",
        fallback_fix=("run tcpxo-daemon as a native sidecar (initContainer, restartPolicy "
                      "Always), install the TCPXO NCCL plugin with the nccl-tcpxo-installer "
                      "DaemonSet, add the devices.gke.io/container.tcpxo-daemon annotation and "
                      "attach the 8 GPU NICs (MTU 8244) through networking.gke.io/interfaces"),
        low_busbw_fix=("check all 8 GPU NICs are attached with MTU 8244 and the tcpxo-daemon "
                       "version matches the node's NCCL plugin installer"),
        gdr_fix=("check the tcpxo-daemon sidecar passed its startup probe, /dev/aperture_devices "
                 "is mounted and the devices.gke.io annotation lists every GPU"),
        notes="the measured figure is all_gather busbw (the preflight runs all_gather); plain "
              "TCP on the same machine gives ~4 "
              "GB/s (NVIDIA aicr). The daemon image is coupled to the plugin installer version "
              "(one row, gpudirect.tcpxo in k8s/addons.yaml). env is env_script's exports "
              "(fabric/tcpxo.py cites the file); NCCL_NVLS_ENABLE is not among them."),
    FabricProfile(
        name="gcp-rdma", fabric="rdma",
        members=(Member("a3-ultragpu-", HGX_H200),),
        source=_GKE_SOURCE.format("gpudirect-rdma"), date=DATE,
        env=_ro({"NCCL_NET": "gIB", "NCCL_CROSS_NIC": "0", "NCCL_NET_GDR_LEVEL": "PIX",
                 "NCCL_IB_ADAPTIVE_ROUTING": "1", "NCCL_IB_QPS_PER_CONNECTION": "4",
                 "NCCL_IB_TC": "52", "NCCL_IB_FIFO_TC": "84",
                 "NCCL_TUNER_CONFIG_PATH": "/usr/local/gib/configs/tuner_config.txtpb",
                 "NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE":
                     "/usr/local/gib/configs/guest_config.txtpb"}),
        ld_library_path=("/usr/local/gib/lib64", "/usr/local/nvidia/lib64"),
        env_script="/usr/local/gib/scripts/set_nccl_env.sh",
        annotations=_ro({"networking.gke.io/default-interface": "eth0"}),
        gke_interfaces=((("eth0", "default"), ("eth1", "{cluster}-gvnic-1"))
                        + _gpu_nics(2, 8, "{cluster}-rdma-{i}", start=0)),
        volumes=(_host("gib", "/home/kubernetes/bin/gib"), _NVIDIA_LIBS),
        volume_mounts=(_mount("gib", "/usr/local/gib"), _NVIDIA_LIBS_MOUNT),
        shm_size="250Gi",
        transport="NET/gIB", link_gbps=3200, gpudirect=True,
        inter_node_busbw_gbs=320.0, busbw_threshold_gbs=256.0,
        threshold_basis="0.8 x derived 320 GB/s (not measured)",
        fallback_fix=("mount /home/kubernetes/bin/gib (the gIB plugin the node installs) at "
                      "/usr/local/gib, set NCCL_NET=gIB and attach rdma-0..7 on eth2..eth9 "
                      "through networking.gke.io/interfaces"),
        low_busbw_fix="check all 8 RDMA NICs are attached and the gIB/NCCL versions match",
        gdr_fix="check the gIB plugin from /home/kubernetes/bin/gib is mounted at /usr/local/gib",
        notes="not measured: inter-node derived as 0.8 x the 3200 Gbps link (400 GB/s). "
              "env_script is the vendor's authority; this env mirrors the values it sets."),
    FabricProfile(
        name="ethernet", fabric="ethernet",
        members=(Member("a2-", HGX_A100), Member("g2-", PCIE_GEN4),
                 Member("Standard_NC", PCIE_GEN4)),
        source="NVIDIA NCCL docs (env.html: NCCL_SOCKET_IFNAME); NVIDIA aicr GKE TCPXO guide",
        date=DATE, env=_ro({"NCCL_SOCKET_IFNAME": "^lo,docker"}),
        transport="NET/Socket", link_gbps=100,
        inter_node_busbw_gbs=4.0, busbw_threshold_gbs=2.0,
        threshold_basis="0.5 x ~4 GB/s plain TCP (a3-mega without TCPXO; NVIDIA aicr): socket "
                        "throughput varies with NIC and host, so this only catches a broken net",
        fallback_fix="", low_busbw_fix=("check NCCL_SOCKET_IFNAME names the pod's data "
                                        "interface; on GKE the NCCL Fast Socket plugin helps"),
        notes="not measured on these instances: inter-node 4 GB/s is the plain-TCP figure "
              "measured on a3-mega, far under these "
              "NICs' 80-100 Gbps; NCCL picks socket threads per NIC vendor, so none are set."),
    FabricProfile(
        name="local-gloo", fabric="gloo", members=(Member("", 1.0),),
        source="PyTorch distributed docs (gloo backend, GLOO_SOCKET_IFNAME)", date=DATE,
        env=_ro({"GLOO_SOCKET_IFNAME": "eth0"}), shm_size="1Gi",
        transport=None, inter_node_busbw_gbs=1.0, busbw_threshold_gbs=0.0,
        threshold_basis="no threshold: CPU gloo on a local cluster",
        notes="local kind cluster, CPU torch with gloo; bandwidth figures are placeholders."),
)

