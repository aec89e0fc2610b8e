"""Per-fabric profiles: the table's facts and the API a renderer and the planner use."""

import json
import re
from pathlib import Path

import pytest

from reclaunch.catalog import bundled_catalog
from reclaunch.errors import PlanError
from reclaunch.fabric import (PROFILES, FabricProfile, get_profile, nccl_env, pod_requirements,
                              profile_for)

EFA = "vpc.amazonaws.com/efa"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RXDM = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v9.9.9"


@pytest.mark.parametrize("instance,devices,name", [
    ("p4d.24xlarge", 4, "efa-p4"), ("p4de.24xlarge", 4, "efa-p4"),
    ("p5.48xlarge", 32, "efa-p5"), ("p5e.48xlarge", 32, "efa-p5"),
    ("p5en.48xlarge", 16, "efa-p5en"),
    ("g5.12xlarge", 1, "efa-g"), ("g6e.12xlarge", 1, "efa-g"), ("g6e.48xlarge", 4, "efa-g"),
])
def test_efa_devices_per_instance(instance, devices, name):
    prof = profile_for("aws", instance)
    req = pod_requirements(prof, "demo", 8)
    assert prof.name == name and prof.fabric == "efa"
    assert req.resources[EFA] == devices
    # FI_EFA_USE_HUGE_PAGE=0: libfabric takes no hugepages, so the pod asks for none
    assert not any(k.startswith("hugepages-") for k in req.resources)
    assert req.resources["nvidia.com/gpu"] == 8
    assert prof.transport == "NET/OFI"


def test_efa_env_follows_vendor():
    p5 = nccl_env(profile_for("aws", "p5.48xlarge"))
    # "Do not set for libfabric>=1.18.0 and aws-ofi-nccl>=1.7.0" (aws-ofi-nccl doc/efa-env-var.md)
    assert "FI_EFA_USE_DEVICE_RDMA" not in p5
    # The plugin sets NCCL_TUNER_PLUGIN to its own library (aws-ofi-nccl src/platform-aws.cpp)
    # and skips that when the variable is already set: never forced.
    assert "NCCL_TUNER_PLUGIN" not in p5
    assert p5["NCCL_NET"] == "AWS Libfabric" and p5["FI_EFA_USE_HUGE_PAGE"] == "0"
    g5 = nccl_env(profile_for("aws", "g5.48xlarge"))
    assert g5["NCCL_NET"] == "AWS Libfabric" and g5["FI_EFA_USE_HUGE_PAGE"] == "0"
    for obsolete in ("FI_PROVIDER", "NCCL_PROTO", "RDMAV_FORK_SAFE", "FI_EFA_FORK_SAFE",
                     "NCCL_TOPO_FILE"):
        assert obsolete not in p5
    assert "NCCL_TUNER_PLUGIN" not in nccl_env(profile_for("aws", "p4d.24xlarge"))
    assert "FI_EFA_USE_DEVICE_RDMA" not in nccl_env(profile_for("aws", "g5.48xlarge"))


@pytest.mark.parametrize("instance,name,topo", [
    ("Standard_ND96asr_v4", "azure-ib-v4", "ndv4"),
    ("Standard_ND96amsr_A100_v4", "azure-ib-v4", "ndv4"),
    ("Standard_ND96isr_H100_v5", "azure-ib-v5", "ndv5"),
])
def test_azure_nd_gets_ib_and_ipc_lock(instance, name, topo):
    from reclaunch.fabric.topology import TOPOLOGIES

    prof = profile_for("azure", instance)
    req = pod_requirements(prof, "demo", 8)
    env = nccl_env(prof)
    assert prof.name == name and prof.transport == "NET/IB"
    assert req.resources["rdma/ib"] == 8
    assert "IPC_LOCK" in req.capabilities
    assert env["NCCL_IB_PCI_RELAXED_ORDERING"] == "1" and env["NCCL_NET_GDR_LEVEL"] == "SYS"
    assert "NCCL_IB_HCA" not in env
    assert env["NCCL_IGNORE_CPU_AFFINITY"] == "1"     # azhpc-images ndv4.sh and ndv5.sh
    assert env["NCCL_NET"] == "IB"                    # no silent fall back to sockets
    # AKS nodes have no /opt/microsoft: the topology ships as a ConfigMap, mounted where
    # NCCL_TOPO_FILE points (Azure/aks-rdma-infiniband mpi-job.yaml).
    assert not any("hostPath" in v for v in req.volumes)
    (cm_name, data), = req.config_maps.items()
    assert cm_name == "demo-nccl-topo" and data == {"topo.xml": TOPOLOGIES[topo]}
    vol = next(v for v in req.volumes if "configMap" in v)
    mount = next(m for m in req.volume_mounts if m["name"] == vol["name"])
    assert vol["configMap"]["name"] == cm_name and mount["readOnly"]
    assert env["NCCL_TOPO_FILE"] == f"{mount['mountPath']}/topo.xml"
    assert TOPOLOGIES[topo].startswith("<system") and "0x020700" in TOPOLOGIES[topo]


def _interfaces(req):
    return json.loads(req.annotations["networking.gke.io/interfaces"])


def test_a3_mega_tcpxo():
    prof = profile_for("gcp", "a3-megagpu-8g")
    with pytest.raises(PlanError, match="pinned tcpxo-daemon image"):
        pod_requirements(prof, "criteo", 8)
    req = pod_requirements(prof, "criteo", 8, rxdm_image=RXDM)
    nics = [i for i in _interfaces(req) if i["network"] != "default"]
    assert [i["interfaceName"] for i in nics] == [f"eth{i}" for i in range(1, 9)]
    assert all(i["network"].startswith("criteo-") for i in nics)
    assert len({i["network"] for i in nics}) == 8
    assert req.annotations["networking.gke.io/default-interface"] == "eth0"
    devices = req.annotations["devices.gke.io/container.tcpxo-daemon"]
    for d in [f"/dev/nvidia{i}" for i in range(8)] + ["/dev/nvidiactl", "/dev/nvidia-uvm",
                                                     "/dev/dmabuf_import_helper"]:
        assert f"- path: {d}\n" in devices
    (daemon,) = req.init_containers
    assert daemon["name"] == "tcpxo-daemon" and daemon["restartPolicy"] == "Always"
    assert daemon["image"] == RXDM
    # Flags retired since tcpgpudmarxd-dev v1.0.20 are gone; the vendor's startup probe reads
    # the file the daemon writes once its buffer manager is up.
    script = daemon["command"][-1]
    assert "--num_hops=2" in script
    assert not any(f in script for f in ("--num_nics", "--uid", "--alsologtostderr"))
    env_names = {e["name"]: e["value"] for e in daemon["env"]}
    probe = daemon["startupProbe"]
    assert probe["exec"]["command"] == ["cat", env_names["HEALTH_CHECK_LOG_FILE"]]
    assert "_" not in env_names["HEALTH_CHECK_LOG_FILE"]
    # The vendor's "typically ~30 s" to ready needs margin: at least 4x that before a kill.
    budget = probe["initialDelaySeconds"] + probe["periodSeconds"] * probe["failureThreshold"]
    assert probe["periodSeconds"] == 5 and budget >= 120
    assert {"NET_ADMIN", "NET_BIND_SERVICE"} <= set(daemon["securityContext"]["capabilities"]["add"])
    host_paths = {v["hostPath"]["path"] for v in req.volumes if "hostPath" in v}
    assert {"/dev/aperture_devices", "/home/kubernetes/bin/nvidia"} <= host_paths
    env = nccl_env(prof)
    assert env["NCCL_FASTRAK_IFNAME"] == ",".join(f"eth{i}" for i in range(1, 9))
    assert env["NCCL_NVLSTREE_MAX_CHUNKSIZE"] == "131072"
    assert "NCCL_NVLS_ENABLE" not in env and "NCCL_ALGO" not in env
    assert req.ld_library_path == ["/usr/local/nvidia/lib64"] and "LD_LIBRARY_PATH" not in req.env
    assert prof.transport == "NET/FasTrak" and req.sidecars == []


def test_tcpxo_env_is_the_installers_profile():
    """Every export of the installer's nccl-env-profile.sh (fixture: the file's export lines
    at google/nccl-plugin-gpudirect-tcpxo v1.0.15) is in the profile with the same value, with
    NCCL_LIB_DIR at GKE's install dir; NCCL_DEBUG* stay with nccl.debug."""
    from reclaunch.fabric import tcpxo

    text = (FIXTURES / "tcpxo" / "nccl-env-profile.exports").read_text()
    exports = dict(re.findall(r"^export (\w+)=(\S+)$", text, re.M))
    exports = {k: v.replace("${NCCL_LIB_DIR}", tcpxo.NCCL_LIB_DIR)
               .replace('"${gpu_nics}"', "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8")
               .replace('"${host_nic}"', "eth0") for k, v in exports.items()}
    ld = exports.pop("LD_LIBRARY_PATH")
    assert ld.strip('"').startswith(tcpxo.NCCL_LIB_DIR + ":")
    for k in ("NCCL_DEBUG", "NCCL_DEBUG_SUBSYS"):
        exports.pop(k)
    env = dict(profile_for("gcp", "a3-megagpu-8g").env)
    assert {k: env.get(k) for k in exports} == exports
    assert set(env) - set(exports) == {"NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", "NCCL_NET"}


def test_tcpxo_pins_its_plugin_net():
    """NCCL_NET names the plugin's net, the one its logs show (NET/FasTrak): a pod without the
    plugin fails NCCL init instead of training over sockets (issue 37)."""
    prof = profile_for("gcp", "a3-megagpu-8g")
    assert dict(prof.env)["NCCL_NET"] == prof.transport.split("/", 1)[1] == "FasTrak"


def test_rxdm_image_comes_from_the_pinned_installer_row():
    from reclaunch.manifests.stackfacts import rxdm_image

    from stacks import common   # part of the product: a rename fails here, never skips

    row = common.gpudirect_release("tcpxo")
    assert rxdm_image(profile_for("gcp", "a3-megagpu-8g")) == row["rxdm_image"]
    assert rxdm_image(profile_for("gcp", "a3-highgpu-8g")) is None


def test_a3_high_tcpx_sidecar():
    prof = profile_for("gcp", "a3-highgpu-8g")
    req = pod_requirements(prof, "criteo", 8)
    assert [i["interfaceName"] for i in _interfaces(req) if i["network"] != "default"] == [
        "eth1", "eth2", "eth3", "eth4"]
    (daemon,) = req.sidecars
    assert daemon["name"] == "tcpx-daemon" and "tcpgpudmarxd" in daemon["image"]
    assert "NET_ADMIN" in daemon["securityContext"]["capabilities"]["add"]
    assert any(m["mountPath"] == "/run/tcpx" for m in daemon["volumeMounts"])
    assert any(m["mountPath"] == "/run/tcpx" for m in req.volume_mounts)
    assert req.exit_file and req.exit_file in daemon["command"][-1]
    env = nccl_env(prof)
    assert env["NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX"] == "/run/tcpx"
    assert prof.transport == "NET/GPUDirectTCPX"
    # Google's unprivileged TCPX workload (container-engine-accelerators gpudirect-tcpx/
    # nccl-test-latest.yaml): the daemon gets the GPUs through the NRI device injector
    devices = req.annotations["devices.gke.io/container.tcpx-daemon"]
    assert devices == "".join(f"- path: /dev/nvidia{i}\n" for i in range(8)) + (
        "- path: /dev/nvidiactl\n- path: /dev/nvidia-uvm\n")
    assert "privileged" not in daemon["securityContext"]
    from reclaunch import clouds
    assert "nri-device-injector" in clouds.fabric("tcpx").addons
    # its flow bindings (gpudirect-tcpx/nccl-config.yaml) and the plugin's net, pinned
    assert env["NCCL_GPUDIRECTTCPX_TX_BINDINGS"].startswith("eth1:8-21,112-125;")
    assert env["NCCL_GPUDIRECTTCPX_RX_BINDINGS"].endswith(";eth4:74-87,178-191")
    assert env["NCCL_NET"] == "GPUDirectTCPX_v7"


def _daemon_script(tmp_path, body: str) -> tuple[list[str], Path]:
    """The tcpx-daemon's shell with a stand-in daemon (`body`), the exit file in tmp_path and a
    fast poll."""
    from reclaunch.fabric import tcpx

    stub = tmp_path / "tcpgpudmarxd"
    stub.write_text(f"#!/bin/sh\n{body}\n")
    stub.chmod(0o755)
    exit_file = tmp_path / "workload_terminated"
    script = (tcpx.DAEMON_SCRIPT.replace(tcpx.EXIT_FILE, str(exit_file))
              .replace("sleep 10", "sleep 0.1")
              .replace("/tcpgpudmarxd/build/app/tcpgpudmarxd", str(stub), 1))
    return ["bash", "-c", script], exit_file


@pytest.mark.timeout(60)
def test_a_dead_tcpx_daemon_ends_its_sidecar(tmp_path):
    """The sidecar looped on the exit file alone: a daemon that died left it Running and the
    job on no GPUDirect receive path, unseen. It now waits on the daemon's PID too."""
    import subprocess

    cmd, _ = _daemon_script(tmp_path, "exit 3")
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1, done
    assert "tcpgpudmarxd exited (3) while the workload runs" in done.stderr


@pytest.mark.timeout(60)
def test_the_tcpx_sidecar_stops_cleanly_when_the_workload_ends(tmp_path):
    import subprocess
    import time

    cmd, exit_file = _daemon_script(tmp_path, "exec sleep 300")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        assert proc.poll() is None       # the daemon runs: so does the sidecar
        exit_file.touch()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def test_a3_ultra_gib():
    prof = profile_for("gcp", "a3-ultragpu-8g")
    req = pod_requirements(prof, "criteo", 8)
    rdma = [i for i in _interfaces(req) if "-rdma-" in i["network"]]
    assert [i["interfaceName"] for i in rdma] == [f"eth{i}" for i in range(2, 10)]
    assert [i["network"] for i in rdma] == [f"criteo-rdma-{i}" for i in range(8)]
    assert any(v.get("hostPath", {}).get("path") == "/home/kubernetes/bin/gib" for v in req.volumes)
    assert nccl_env(prof)["NCCL_NET"] == "gIB" and prof.transport == "NET/gIB"


@pytest.mark.parametrize("cloud,instance", [("gcp", "a2-highgpu-8g"), ("gcp", "g2-standard-96"),
                                            ("azure", "Standard_NC96ads_A100_v4")])
def test_plain_ethernet(cloud, instance):
    prof = profile_for(cloud, instance)
    req = pod_requirements(prof, "demo", 8)
    assert prof.name == "ethernet" and prof.transport == "NET/Socket" and prof.warning is None
    assert set(req.resources) == {"nvidia.com/gpu"} and not req.sidecars and not req.annotations


def test_local_is_gloo():
    prof = profile_for("local", None)
    assert prof.name == "local-gloo" and prof.transport is None
    assert pod_requirements(prof, "demo", 0).resources == {}


def test_explicit_ethernet_on_rdma_instance_warns():
    prof = profile_for("aws", "p5.48xlarge", "ethernet")
    assert prof.name == "ethernet" and "efa" in prof.warning
    assert prof.intra_node_busbw_gbs == profile_for("aws", "p5.48xlarge").intra_node_busbw_gbs
    assert "vpc.amazonaws.com/efa" not in pod_requirements(prof, "d", 8).resources


def test_explicit_fabric_honoured_and_checked():
    assert profile_for("aws", "p5.48xlarge", "efa").name == "efa-p5"
    with pytest.raises(PlanError, match="has efa"):
        profile_for("aws", "p5.48xlarge", "infiniband")
    with pytest.raises(PlanError, match="unknown interconnect"):
        profile_for("aws", "p5.48xlarge", "myrinet")


def test_unknown_instance_falls_back_to_ethernet_with_warning():
    prof = profile_for("aws", "x9.huge")
    assert prof.name == "ethernet" and "no fabric profile" in prof.warning
    assert prof.intra_node_busbw_gbs > 0


def test_every_catalog_offer_resolves_to_its_fabric():
    cat = bundled_catalog()
    for o in cat.offers:
        prof = profile_for(o.cloud, o.instance_type, "auto", cat)
        assert prof.fabric == o.fabric, o.instance_type
        assert prof.warning is None
        assert prof.intra_node_busbw_gbs > 0 and prof.inter_node_busbw_gbs > 0


def test_catalog_row_overrides_family_prefix():
    class Cat:
        def instance(self, cloud, it):
            return type("O", (), {"fabric": "ethernet"})()
    prof = profile_for("aws", "g5.xlarge", "auto", Cat())
    assert prof.name == "ethernet" and prof.warning is None


@pytest.mark.parametrize("prof", PROFILES, ids=lambda p: p.name)
def test_no_profile_forces_nccl_algo(prof: FabricProfile):
    assert "NCCL_ALGO" not in prof.env and "NCCL_ALGO" not in prof.pod_env
    assert "NCCL_ALGO" not in nccl_env(prof) and "NCCL_ALGO" not in nccl_env(prof, debug="INFO")
    for c in (*prof.sidecars, *prof.init_containers):
        assert all(e["name"] != "NCCL_ALGO" for e in c.get("env", []))


@pytest.mark.parametrize("prof", PROFILES, ids=lambda p: p.name)
def test_every_profile_has_source_date_and_figures(prof: FabricProfile):
    assert prof.source and prof.date == "2026-11"
    assert prof.threshold_basis and prof.notes
    assert prof.members and prof.inter_node_busbw_gbs > 0
    if prof.measured_2node_busbw_gbs is None and prof.fabric != "gloo":
        assert "not measured" in prof.notes
    if prof.fabric not in ("gloo", "ethernet"):
        assert prof.busbw_threshold_gbs > 0 and prof.fallback_fix and prof.transport
        # at scale, never more than the link: 2-node figures can exceed it
        assert prof.inter_node_busbw_gbs <= prof.link_gbps / 8


def test_thresholds_from_measured_table():
    assert get_profile("efa-p5").busbw_threshold_gbs == pytest.approx(0.8 * 437.8, abs=0.05)
    assert get_profile("efa-p4").busbw_threshold_gbs == pytest.approx(0.8 * 78.3, abs=0.05)
    assert get_profile("azure-ib-v4").busbw_threshold_gbs == 180.0
    assert get_profile("gcp-tcpxo").busbw_threshold_gbs == pytest.approx(0.8 * 188.5, abs=0.05)
    assert get_profile("gcp-tcpx").busbw_threshold_gbs == pytest.approx(0.8 * 50, abs=0.05)
    assert get_profile("ethernet").busbw_threshold_gbs < 5


def test_user_env_wins_and_debug_switch():
    prof = profile_for("gcp", "a3-megagpu-8g")
    env = nccl_env(prof, {"NCCL_BUFFSIZE": "4194304", "NCCL_ALGO": "Ring", "MY_VAR": "1"})
    assert env["NCCL_BUFFSIZE"] == "4194304" and env["MY_VAR"] == "1"
    assert env["NCCL_ALGO"] == "Ring"      # only because the user asked
    assert env["NCCL_DEBUG"] == "WARN"
    assert nccl_env(prof, debug="INFO")["NCCL_DEBUG"] == "INFO"
    assert nccl_env(prof, debug="info")["NCCL_DEBUG_SUBSYS"] == "INIT,NET,ENV"
    assert nccl_env(prof, {"NCCL_DEBUG": "TRACE"}, debug="INFO")["NCCL_DEBUG"] == "TRACE"
    with pytest.raises(PlanError):
        nccl_env(prof, debug="LOUD")


def test_pod_requirements_are_fresh_copies():
    prof = profile_for("gcp", "a3-megagpu-8g")
    req = pod_requirements(prof, "a", 8, rxdm_image=RXDM)
    req.init_containers[0]["volumeMounts"].append({"name": "x", "mountPath": "/x"})
    req.resources["cpu"] = 1
    again = pod_requirements(prof, "a", 8, rxdm_image=RXDM)
    assert len(again.init_containers[0]["volumeMounts"]) == 3 and "cpu" not in again.resources


@pytest.mark.parametrize("prof", [p for p in PROFILES if p.fabric == "efa"], ids=lambda p: p.name)
def test_every_efa_profile_pins_the_plugin_and_fork_safe_hugepages(prof):
    """Every EFA row, the G parts included: NCCL_NET pinned so a missing plugin fails instead
    of running on sockets, and FI_EFA_USE_HUGE_PAGE=0 because data-loader workers fork
    (aws-ofi-nccl doc/efa-env-var.md). efa-g6 once carried its own env without either. The pin
    is "AWS Libfabric": plugins up to 1.11 register only that name (a pin of "Libfabric" stops
    their NCCL init), newer ones answer to it (nvidia_plugin_name_fixup)."""
    env = nccl_env(prof)
    assert env["NCCL_NET"] == "AWS Libfabric"
    assert "FI_EFA_USE_DEVICE_RDMA" not in env
    assert env["FI_EFA_USE_HUGE_PAGE"] == "0"
