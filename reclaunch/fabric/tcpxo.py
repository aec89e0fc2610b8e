"""GPUDirect-TCPXO (A3 Mega): the NCCL environment and the RxDM sidecar, pinned as data.

The NCCL plugin installer DaemonSet and the RxDM (tcpxo-daemon) image are coupled
(GoogleCloudPlatform/container-engine-accelerators gpudirect-tcpxo/README.md: "The
tcpxo-daemon version is coupled with the NCCL plugin installer version"). Both come from one
row, `gpudirect.tcpxo` in k8s/addons.yaml, which the stacks also install the installer from;
this module only reads that row.

ENV is the installer's nccl-env-profile.sh (google/nccl-plugin-gpudirect-tcpxo
tcpxo_scripts/nccl-env-profile.sh, identical at tags v1.0.14-1, v1.0.15 and v1.0.17) with
NCCL_LIB_DIR set to where GKE's installer copies the libraries (/usr/local/nvidia/lib64, the
row's nccl_lib_dir) and the NIC names at the script's defaults (its find_nics() picks the same
on A3 Mega: eth0 host NIC, eth1..eth8 GPU NICs). NCCL_DEBUG/NCCL_DEBUG_SUBSYS stay with
`nccl.debug`. Setting them as env, rather than sourcing the script, keeps the values
reviewable in the rendered job; a test diffs this table against the script's exports.
"""

from __future__ import annotations

from types import MappingProxyType

SCRIPT = ("google/nccl-plugin-gpudirect-tcpxo tcpxo_scripts/nccl-env-profile.sh "
          "(tags v1.0.14-1..v1.0.17)")
NCCL_LIB_DIR = "/usr/local/nvidia/lib64"

ENV = MappingProxyType({
    "NCCL_FASTRAK_IFNAME": "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8",
    "NCCL_FASTRAK_CTRL_DEV": "eth0",
    "NCCL_SOCKET_IFNAME": "eth0",
    "NCCL_CROSS_NIC": "0",
    "NCCL_PROTO": "Simple,LL128",
    "NCCL_MIN_NCHANNELS": "4",
    "NCCL_NVLSTREE_MAX_CHUNKSIZE": "131072",
    "NCCL_P2P_NET_CHUNKSIZE": "524288",
    "NCCL_P2P_PCI_CHUNKSIZE": "524288",
    "NCCL_P2P_NVL_CHUNKSIZE": "1048576",
    "NCCL_FASTRAK_NUM_FLOWS": "2",
    "NCCL_FASTRAK_ENABLE_CONTROL_CHANNEL": "0",
    "NCCL_BUFFSIZE": "8388608",
    "NCCL_FASTRAK_USE_SNAP": "1",
    "NCCL_FASTRAK_USE_LLCM": "1",
    "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7",
    "NCCL_NET_GDR_LEVEL": "PIX",
    "NCCL_FASTRAK_ENABLE_HOTPATH_LOGGING": "0",
    "NCCL_TUNER_PLUGIN": "libnccl-tuner.so",
    "NCCL_TUNER_CONFIG_PATH": f"{NCCL_LIB_DIR}/a3plus_tuner_config.textproto",
    "NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE": f"{NCCL_LIB_DIR}/a3plus_guest_config.textproto",
    "NCCL_FASTRAK_PLUGIN_ACCEPT_TIMEOUT_MS": "600000",
    # Not in the script: where the installer's pre-installation step bind-mounts the
    # aperture devices; the vendor's workload sets it (gpudirect-tcpxo/nccl-test-latest.yaml).
    "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY": "/dev/aperture_devices",
    # Not in the script either: the plugin's own net name (google/nccl-plugin-gpudirect-tcpxo
    # tcpdirect_plugin/fastrak_offload/fastrak_plugin.cc, ncclNetPlugin_v7 "FasTrak"), pinned
    # as NVIDIA/dgxc-benchmarking's GCP setup does. The plugin aborts on its own init failure,
    # but when its library never loads (installer not run, mount missing) NCCL would pick its
    # socket transport unasked; with the pin, init stops naming the missing net.
    "NCCL_NET": "FasTrak",
})

# RxDM flags since tcpgpudmarxd-dev v1.0.20: --num_nics, --uid and --alsologtostderr are
# retired (google/nccl-plugin-gpudirect-tcpxo README "Notes for Existing Users";
# buffer_mgmt_daemon/main_cloud.cc ABSL_RETIRED_FLAG).
RXDM_ARGS = "--num_hops=2"
# The daemon writes this file once its buffer manager is up (buffer_mgmt_daemon/
# fastrak_gpumem_manager.cc HEALTH_CHECK_LOG_FILE; the name may not contain '_'); the startup
# probe is the vendor's (container-engine-accelerators gpudirect-tcpxo/best-practice.md
# "Setup Startup Probe for the TCPXO-daemon Sidecar"), with a longer budget: that guide says
# the daemon is ready in "typically ~30 s", and 1 + 6 x 5 = 31 s left no margin, so a slow
# but healthy node killed its own sidecar (each kill a restart the job's backoffLimit
# counts). 1 + 24 x 5 = 121 s; a bad node still fails in two minutes, not an NCCL hang.
HEALTH_FILE = "/run/health-check"
STARTUP_PROBE = MappingProxyType({
    "initialDelaySeconds": 1, "periodSeconds": 5, "timeoutSeconds": 1,
    "successThreshold": 1, "failureThreshold": 24,
    "exec": {"command": ["cat", HEALTH_FILE]},
})
# Placeholder the profile table carries for the daemon image; pod_requirements replaces it
# with the pinned row's rxdm_image (so the table cannot drift from the installer pin).
RXDM_IMAGE = "<gpudirect.tcpxo.rxdm_image from k8s/addons.yaml>"


def rxdm_container() -> dict:
    """The tcpxo-daemon native sidecar (restartPolicy Always: it stops with the pod)."""
    return {
        "name": "tcpxo-daemon",
        "image": RXDM_IMAGE,
        "restartPolicy": "Always",
        "command": ["/bin/sh", "-c",
                    "set -ex\nchmod 755 /fts/entrypoint_rxdm_container.sh\n"
                    f"/fts/entrypoint_rxdm_container.sh {RXDM_ARGS}"],
        "securityContext": {"capabilities": {"add": ["NET_ADMIN", "NET_BIND_SERVICE"]}},
        "env": [{"name": "LD_LIBRARY_PATH", "value": NCCL_LIB_DIR},
                {"name": "HEALTH_CHECK_LOG_FILE", "value": HEALTH_FILE}],
        "startupProbe": dict(STARTUP_PROBE),
        "volumeMounts": [{"name": "nvidia-libs", "mountPath": "/usr/local/nvidia"},
                         {"name": "sys", "mountPath": "/hostsysfs"},
                         {"name": "proc-sys", "mountPath": "/hostprocsysfs"}],
    }

