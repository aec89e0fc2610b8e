"""NCCL preflight: the rendered job, the log parsers and the verdict, on real-format logs."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.needs import need_input, need_module
from reclaunch.errors import PlanError, ReclaunchError
from reclaunch.fabric import profile_for
from reclaunch.manifests.preflight import (ALLREDUCE_SCRIPT, NcclLogError, nccl_tests_job,
                                 parse_nccl_debug, parse_nccl_tests, threshold_for, verdict)

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "nccl_logs"


def log(name: str) -> str:
    return (LOGS / name).read_text()


def judge(name, cloud, instance, nodes=2):
    text = log(name)
    return verdict(parse_nccl_tests(text), parse_nccl_debug(text), profile_for(cloud, instance),
                   nodes)


def test_parse_healthy_p5_table():
    r = parse_nccl_tests(log("p5_efa_healthy.log"))
    assert len(r.rows) == 31 and r.ranks == 16
    assert r.rows[0].size == 8 and r.rows[0].count == 2 and r.rows[0].type == "float"
    assert r.rows[0].redop == "sum" and r.rows[0].root == -1
    big = r.largest
    assert big.size == 8 << 30 and big.oop_busbw == 466.53 and big.ip_busbw == 468.88
    assert r.busbw == 468.88 and r.avg_busbw == pytest.approx(105.4648)
    assert r.out_of_bounds == 0 and r.wrong == 0
    assert r.header["nGpus"] == "1" and r.header["maxBytes"] == str(8 << 30)


def test_parse_debug_transports():
    assert parse_nccl_debug(log("p5_efa_healthy.log")).primary == "NET/OFI"
    d = parse_nccl_debug(log("p5_efa_healthy.log"))
    assert d.ofi_provider == "efa" and d.version.startswith("2.21.5")
    assert parse_nccl_debug(log("azure_ib_low.log")).primary == "NET/IB"
    assert parse_nccl_debug(log("a3mega_fastrak.log")).primary == "NET/FasTrak"
    s = parse_nccl_debug(log("p5_socket_fallback.log"))
    assert s.primary == "NET/Socket" and s.socket_ifaces == ("eth0",) and s.plugin_missing


@pytest.mark.parametrize("line,token", [
    ("h:1:1 [0] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)", "NET/OFI"),
    ("h:1:1 [0] NCCL INFO Using network AWS Libfabric", "NET/OFI"),
    ("h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>",
     "NET/IB"),
    ("h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>", "NET/Socket"),
    ("h:1:1 [0] NCCL INFO Using network Socket", "NET/Socket"),
    ("h:1:1 [0] NCCL INFO NET/GPUDirectTCPX ver. 3.1.8.", "NET/GPUDirectTCPX"),
    ("h:1:1 [0] NCCL INFO Using network GPUDirectTCPX_v7", "NET/GPUDirectTCPX"),
    ("h:1:1 [0] NCCL INFO NET/FasTrak plugin initialized", "NET/FasTrak"),
    ("h:1:1 [0] NCCL INFO Using network gIB", "NET/gIB"),
    ("h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/Socket/0", "NET/Socket"),
    ("h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/AWS Libfabric/0/GDRDMA",
     "NET/OFI"),
])
def test_single_debug_lines(line, token):
    assert parse_nccl_debug(line).primary == token


def test_channel_lines_beat_init_lines():
    text = ("x NCCL INFO NET/IB : Using [0]mlx5_0:1/IB\n"
            "x NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/Socket/0\n")
    assert parse_nccl_debug(text).primary == "NET/Socket"


def test_healthy_p5_passes():
    v = judge("p5_efa_healthy.log", "aws", "p5.48xlarge")
    assert v.ok and v.cause is None and v.transport == "NET/OFI"
    assert v.threshold == pytest.approx(350.2) and v.busbw > v.threshold
    assert any(">= 4 nodes" in n for n in v.notes)   # 2-node Tree caveat


@pytest.mark.parametrize("instance,derived", [("p5.48xlarge", False), ("p5en.48xlarge", True)])
def test_a_derived_threshold_says_so(instance, derived):
    """Launch review 10: p5en's (and ND H100 v5's) floors are derived from other fabrics'
    measurements; the verdict says so instead of reading like a measured line."""
    v = judge("p5_efa_healthy.log", "aws", instance)
    said = [n for n in v.notes if "derived, not measured" in n]
    assert bool(said) == derived, v.notes
    nd = judge("azure_ib_low.log", "azure", "Standard_ND96isr_H100_v5")
    assert any("256.0 GB/s threshold is derived, not measured" in n for n in nd.notes)


def test_p5_socket_fallback_names_the_fix():
    v = judge("p5_socket_fallback.log", "aws", "p5.48xlarge")
    assert not v.ok and v.transport == "NET/Socket"
    assert "fell back" in v.cause and "plugin was not found" in v.cause
    assert "aws-ofi-nccl" in v.fix and "vpc.amazonaws.com/efa" in v.fix
    assert "EFA device plugin" in v.fix


def test_ofi_with_tcp_provider_is_a_fallback():
    text = log("p5_efa_healthy.log").replace("Selected Provider is efa", "Selected Provider is tcp")
    v = verdict(parse_nccl_tests(text), parse_nccl_debug(text), profile_for("aws", "p5.48xlarge"), 2)
    assert not v.ok and "provider 'tcp'" in v.cause and "vpc.amazonaws.com/efa" in v.fix


def test_azure_ib_under_threshold():
    v = judge("azure_ib_low.log", "azure", "Standard_ND96asr_v4")
    assert not v.ok and v.transport == "NET/IB" and v.threshold == 180.0
    assert "under the 180.0 GB/s threshold" in v.cause
    assert "NCCL_TOPO_FILE" in v.fix and "ibstat" in v.fix


def test_a3_mega_fastrak_passes():
    v = judge("a3mega_fastrak.log", "gcp", "a3-megagpu-8g")
    assert v.ok and v.transport == "NET/FasTrak" and v.threshold == pytest.approx(150.8)


def test_tcpxo_profile_on_socket_log_names_sidecar():
    v = judge("p5_socket_fallback.log", "gcp", "a3-megagpu-8g")
    assert not v.ok and "tcpxo-daemon" in v.fix and "plugin" in v.fix


def test_wrong_values_fail():
    text = log("a3mega_fastrak.log")
    lines = text.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.strip().startswith("8589934592"))
    t = lines[i].split()
    t[8] = t[12] = "3"
    lines[i] = "  ".join(t)
    v = verdict(parse_nccl_tests("\n".join(lines)), parse_nccl_debug(text),
                profile_for("gcp", "a3-megagpu-8g"), 2)
    assert not v.ok and "6 wrong values" in v.cause and "LL128" in v.fix


def test_threshold_scales_with_nodes():
    p5 = profile_for("aws", "p5.48xlarge")
    assert threshold_for(p5, 2) == pytest.approx(350.2)
    assert threshold_for(p5, 8) == pytest.approx(320.0)     # 0.8 x the 400 GB/s link
    assert threshold_for(p5, 1) == pytest.approx(0.8 * 478.9, abs=0.1)
    assert threshold_for(profile_for("local", None), 2) == 0.0


@pytest.mark.parametrize("name,msg", [("garbage.log", "no nccl-tests result rows"),
                                      (None, "empty")])
def test_garbage_and_empty_give_clear_errors(name, msg):
    text = log(name) if name else "   \n"
    with pytest.raises(NcclLogError, match=msg) as exc:
        parse_nccl_tests(text)
    assert isinstance(exc.value, ReclaunchError) and exc.value.hint
    assert parse_nccl_debug(text).primary is None


def test_error_hint_quotes_first_nccl_warn():
    text = "h:1:1 [0] NCCL WARN NET/OFI Couldn't open EFA device\nTest NCCL failure common.cu:1\n"
    with pytest.raises(NcclLogError) as exc:
        parse_nccl_tests(text)
    assert "Couldn't open EFA device" in str(exc.value)


def test_mpirun_tagged_lines_parse():
    text = "\n".join(f"[1,0]<stdout>:{ln}" for ln in log("p5_efa_healthy.log").splitlines())
    assert parse_nccl_tests(text).busbw == 468.88


def _pod(job, role="Master"):
    return job["spec"]["pytorchReplicaSpecs"][role]["template"]


def test_job_shape_p5():
    job = nccl_tests_job("pre", "ml", "img:1", 4, 8, profile_for("aws", "p5.48xlarge"),
                         cluster_name="criteo")
    assert job["apiVersion"] == "kubeflow.org/v1" and job["kind"] == "PyTorchJob"
    assert job["spec"]["nprocPerNode"] == "8"
    specs = job["spec"]["pytorchReplicaSpecs"]
    assert specs["Master"]["replicas"] == 1 and specs["Worker"]["replicas"] == 3
    c = _pod(job)["spec"]["containers"][0]
    assert c["name"] == "pytorch"
    env = {e["name"]: e["value"] for e in c["env"]}
    assert env["NCCL_DEBUG"] == "INFO" and "NCCL_ALGO" not in env
    assert env["NCCL_NET"] == "AWS Libfabric" and "FI_EFA_USE_DEVICE_RDMA" not in env
    assert "torchrun --no-python" in c["command"][-1] and "-b 8 -e 8G -f 2" in c["command"][-1]
    assert c["resources"]["limits"]["vpc.amazonaws.com/efa"] == 32
    assert c["resources"]["limits"]["nvidia.com/gpu"] == 8
    # hugepages need a cpu or memory request (API server core validation), and requests of
    # devices and hugepages must equal their limits.
    req, lim = c["resources"]["requests"], c["resources"]["limits"]
    assert req["cpu"] == "8" and req["memory"] == lim["memory"] == "32Gi"
    assert all(req[k] == lim[k] for k in lim)
    # libfabric and aws-ofi-nccl are put on LD_LIBRARY_PATH ahead of the image's own
    assert c["command"][-1].startswith('export LD_LIBRARY_PATH="/opt/amazon/ofi-nccl/lib')
    assert "/opt/amazon/efa/lib" in c["command"][-1].splitlines()[0]
    assert job["metadata"]["labels"]["reclaunch-cluster"] == "criteo"
    assert any(v["name"] == "dshm" and v["emptyDir"]["medium"] == "Memory"
               for v in _pod(job)["spec"]["volumes"])


def test_job_tcpx_sidecar_stops_and_single_node():
    job = nccl_tests_job("pre", "ml", "img:1", 1, 8, profile_for("gcp", "a3-highgpu-8g"))
    assert "Worker" not in job["spec"]["pytorchReplicaSpecs"]
    spec = _pod(job)["spec"]
    assert [c["name"] for c in spec["containers"]] == ["pytorch", "tcpx-daemon"]
    assert "touch /run/reclaunch/workload_terminated" in spec["containers"][0]["command"][-1]
    assert "networking.gke.io/interfaces" in _pod(job)["metadata"]["annotations"]


def test_job_tcpxo_native_sidecar_and_azure_caps():
    spec = _pod(nccl_tests_job("p", "ml", "i", 2, 8, profile_for("gcp", "a3-megagpu-8g"),
                               rxdm_image="rxdm:v1"))["spec"]
    assert spec["initContainers"][0]["restartPolicy"] == "Always"
    assert spec["initContainers"][0]["image"] == "rxdm:v1"
    az = _pod(nccl_tests_job("p", "ml", "i", 2, 8, profile_for("azure", "Standard_ND96asr_v4")))
    assert "IPC_LOCK" in az["spec"]["containers"][0]["securityContext"]["capabilities"]["add"]


def test_job_validates_against_crd_schema():
    crd = need_input(Path(__file__).resolve().parents[3] / "shared" / "schemas"
                     / "kubeflow.org_pytorchjobs.yaml", "the PyTorchJob CRD schema check")
    jsonschema = need_module("jsonschema", "dev")
    import yaml
    doc = yaml.safe_load(crd.read_text())
    schema = next(v for v in doc["spec"]["versions"] if v["name"] == "v1")["schema"]["openAPIV3Schema"]
    for inst in ("p5.48xlarge",):
        jsonschema.validate(nccl_tests_job("p", "ml", "i", 2, 8, profile_for("aws", inst)), schema)
    for inst in ("a3-megagpu-8g", "a3-highgpu-8g", "a3-ultragpu-8g"):
        jsonschema.validate(nccl_tests_job("p", "ml", "i", 2, 8, profile_for("gcp", inst),
                                           rxdm_image="rxdm:v1"), schema)
    jsonschema.validate(nccl_tests_job("p", "ml", "i", 2, 8,
                                       profile_for("azure", "Standard_ND96isr_H100_v5")), schema)


def test_job_refuses_gloo():
    with pytest.raises(PlanError):
        nccl_tests_job("p", "ml", "i", 2, 1, profile_for("local", None))


def test_wrapper_script_runs_and_parses(tmp_path):
    """The embedded script for real: 2 CPU ranks with gloo under torchrun, as in the pod."""
    need_module("torch", "local")
    torchrun = shutil.which("torchrun", path=os.path.dirname(sys.executable))
    env = {**os.environ, "PET_NNODES": "1", "PET_NPROC_PER_NODE": "2",
           "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    out = subprocess.run([torchrun, "--no-python", "python3", "-c", ALLREDUCE_SCRIPT,
                          "-b", "8", "-e", "64K", "-f", "8"], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    r = parse_nccl_tests(out.stdout)
    assert [row.size for row in r.rows] == [8, 64, 512, 4096, 32768]
    assert r.ranks == 2 and r.wrong == 0 and r.out_of_bounds == 0 and r.avg_busbw is not None
    assert r.rows[0].oop_busbw is None and r.rows[-1].ip_busbw is not None


def _gdr_log(text: str, gdr: bool) -> str:
    """The healthy p5 log with its channel lines' /GDRDMA suffix kept or removed."""
    return text if gdr else text.replace("/GDRDMA", "")


@pytest.mark.parametrize("name,cloud,instance", [
    ("p5_efa_healthy.log", "aws", "p5.48xlarge"),
    ("azure_ib_low.log", "azure", "Standard_ND96amsr_A100_v4"),
    ("a3mega_fastrak.log", "gcp", "a3-megagpu-8g"),
])
def test_gpudirect_is_checked_where_the_fabric_promises_it(name, cloud, instance):
    text = log(name)
    prof = profile_for(cloud, instance)
    assert prof.gpudirect and parse_nccl_debug(text).gdr is True
    ok = verdict(parse_nccl_tests(text), parse_nccl_debug(text), prof, 2)
    assert "GPUDirect" not in (ok.cause or "")
    bounced = _gdr_log(text, gdr=False)
    d = parse_nccl_debug(bounced)
    assert d.gdr is False and d.gdr_channels[0] == 0 and d.primary == prof.transport
    v = verdict(parse_nccl_tests(bounced), d, prof, 2)
    assert not v.ok and f"NCCL used {prof.transport} without GPUDirect RDMA" in v.cause
    assert v.fix and prof.gdr_fix in v.fix


def test_no_gdr_check_for_fabrics_without_it():
    text = log("p5_efa_healthy.log").replace("/GDRDMA", "")
    prof = profile_for("aws", "g5.48xlarge")   # no GPUDirect RDMA on g5
    v = verdict(parse_nccl_tests(text), parse_nccl_debug(text), prof, 2)
    assert "GPUDirect" not in (v.cause or "")


def test_single_node_verdict_says_it_measured_nvlink_only():
    from reclaunch.fabric import single_node

    text = log("p5_efa_healthy.log")
    prof = single_node(profile_for("aws", "p5.48xlarge"))
    v = verdict(parse_nccl_tests(text), parse_nccl_debug(text), prof, 1)
    assert any("measured NVLink/PCIe between the node's GPUs only" in n and "efa network" in n
               for n in v.notes)
    two = verdict(parse_nccl_tests(text), parse_nccl_debug(text), profile_for("aws", "p5.48xlarge"), 2)
    assert not any("single node" in n for n in two.notes)


def test_single_node_preflight_requests_no_fabric_devices():
    from reclaunch.fabric import single_node

    job = nccl_tests_job("p", "ml", "i", 1, 8, single_node(profile_for("aws", "p5.48xlarge")))
    c = _pod(job)["spec"]["containers"][0]
    assert set(c["resources"]["limits"]) == {"nvidia.com/gpu", "memory"}
    assert "LD_LIBRARY_PATH" not in c["command"][-1]
