"""GPUDirect-TCPX (A3 High, a3-highgpu-8g): the NCCL environment and the tcpx-daemon sidecar.

ENV is what Google's a3-highgpu-8g workloads export: GoogleCloudPlatform/
container-engine-accelerators@21ed661 gpudirect-tcpx/nccl-config.yaml (run-nccl.sh) with the
pod's NIC names (eth0 host NIC, eth1..eth4 GPU NICs), the same values as cluster-toolkit@7174ca3
examples/machine-learning/a3-highgpu-8g/nccl-tests/run-nccl-tests.sh under the host's names.
The TX/RX bindings pin each GPU NIC's flows to the cores of its NUMA node (208 vCPUs of an
a3-highgpu-8g); without them the plugin spreads them over every core. NCCL_ALGO=Ring is theirs
and not ours (no profile forces the algorithm).
"""

from __future__ import annotations

from types import MappingProxyType

UDS_PATH = "/run/tcpx"
EXIT_FILE = "/run/reclaunch/workload_terminated"

ENV = MappingProxyType({
    "NCCL_SOCKET_IFNAME": "eth0",
    "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME": "eth1,eth2,eth3,eth4",
    "NCCL_GPUDIRECTTCPX_CTRL_DEV": "eth0",
    "NCCL_GPUDIRECTTCPX_TX_BINDINGS":
        "eth1:8-21,112-125;eth2:8-21,112-125;eth3:60-73,164-177;eth4:60-73,164-177",
    "NCCL_GPUDIRECTTCPX_RX_BINDINGS":
        "eth1:22-35,126-139;eth2:22-35,126-139;eth3:74-87,178-191;eth4:74-87,178-191",
    "NCCL_CROSS_NIC": "0", "NCCL_NET_GDR_LEVEL": "PIX", "NCCL_P2P_PXN_LEVEL": "0",
    "NCCL_PROTO": "Simple", "NCCL_BUFFSIZE": "4194304", "NCCL_DYNAMIC_CHUNK_SIZE": "524288",
    "NCCL_P2P_NET_CHUNKSIZE": "524288", "NCCL_P2P_PCI_CHUNKSIZE": "524288",
    "NCCL_P2P_NVL_CHUNKSIZE": "1048576",
    "NCCL_NSOCKS_PERTHREAD": "4", "NCCL_SOCKET_NTHREADS": "1",
    "NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX": UDS_PATH,
    "NCCL_GPUDIRECTTCPX_PROGRAM_FLOW_STEERING_WAIT_MICROS": "500000",
    # The plugin's net (cluster-toolkit's script above exports exactly this): a pod whose
    # plugin did not load stops at NCCL init naming it, instead of training on sockets.
    "NCCL_NET": "GPUDirectTCPX_v7",
})

# The daemon runs in the background so the container can stop when the training command
# touches EXIT_FILE (a regular sidecar: the job's pods never complete while it runs). The
# shell waits on the daemon's PID, not only on the file: a daemon that dies while the workload
# runs ends the container with an error (restarted, counted, in its log) instead of leaving a
# sleeping loop that looks healthy while NCCL has no receive path.
DAEMON_SCRIPT = (
    "/tcpgpudmarxd/build/app/tcpgpudmarxd --gpu_nic_preset a3vm --gpu_shmem_type fd "
    f"--uds_path {UDS_PATH} --setup_param \"--verbose 128 2 0\" &\n"
    "daemon=$!\n"
    f"(while [ ! -e {EXIT_FILE} ]; do sleep 10; done; kill -TERM \"$daemon\") &\n"
    "watcher=$!\n"
    "trap 'kill -TERM \"$daemon\" \"$watcher\" 2>/dev/null; exit 0' TERM\n"
    "wait \"$daemon\"; rc=$?\n"
    "kill \"$watcher\" 2>/dev/null\n"
    f"[ -e {EXIT_FILE} ] && exit 0\n"
    "echo \"tcpx-daemon: tcpgpudmarxd exited ($rc) while the workload runs\" >&2\n"
    "exit 1")


def daemon_container(image: str) -> dict:
    """The tcpx-daemon sidecar. Unprivileged: the GPUs reach it through the NRI device
    injector (the pod's devices.gke.io/container.tcpx-daemon annotation), as in
    container-engine-accelerators@0e5609b gpudirect-tcpx/nccl-test-latest.yaml."""
    return {
        "name": "tcpx-daemon",
        "image": image,
        "command": ["bash", "-c", DAEMON_SCRIPT],
        "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}},
        "env": [{"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"}],
        "volumeMounts": [{"name": "nvidia-libs", "mountPath": "/usr/local/nvidia"},
                         {"name": "tcpx-socket", "mountPath": UDS_PATH},
                         {"name": "reclaunch-exit", "mountPath": "/run/reclaunch"},
                         {"name": "sys", "mountPath": "/hostsysfs"},
                         {"name": "proc-sys", "mountPath": "/hostprocsysfs"}]}
