from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from reclaunch.planner import make_plan
from reclaunch.manifests.job import render, to_yaml
from reclaunch.spec import parse_spec
from tests.conftest import EXAMPLES, ROOT
from tests.needs import need_input
from tests.render.k8s_checks import CRD_PATH, validate_all, validate_pytorchjob

GOLDEN = ROOT / "tests" / "golden"
CLOUD_EXAMPLES = ["aws-deepfm-p4d", "aws-auto-h100", "azure-din-nd96amsr", "gcp-dcnv2-a3mega",
                  "local-deepfm"]


def plan_for(stem: str, *subs: tuple[str, str]):
    text = (EXAMPLES / f"{stem}.yaml").read_text()
    for old, new in subs:
        assert old in text, old
        text = text.replace(old, new, 1)
    return make_plan(parse_spec(text, f"{stem}.yaml"))


def job_of(objs):
    return next(o for o in objs if o["kind"] == "PyTorchJob")


def container(job, role="Worker"):
    specs = job["spec"]["pytorchReplicaSpecs"]
    return (specs.get(role) or specs["Master"])["template"]["spec"]["containers"][0]


def env_of(c) -> dict[str, str]:
    return {e["name"]: e["value"] for e in c["env"]}


def normalised(objs) -> str:
    """Golden text without what depends on today's date (stale flags, price age warnings)."""
    out = []
    for o in objs:
        if o["kind"] == "ConfigMap" and "plan.json" in o["data"]:
            plan = json.loads(o["data"]["plan.json"])
            plan.pop("warnings", None)
            plan.get("cost", {}).pop("stale", None)
            o = {**o, "data": {**o["data"], "plan.json": json.dumps(plan, indent=1, sort_keys=True)}}
        out.append(o)
    return to_yaml(out)


@pytest.mark.parametrize("stem", CLOUD_EXAMPLES)
def test_golden(stem: str) -> None:
    text = normalised(render(plan_for(stem)))
    golden = GOLDEN / f"{stem}.yaml"
    if os.environ.get("UPDATE_GOLDEN") or not golden.exists():
        golden.write_text(text)
        if not os.environ.get("UPDATE_GOLDEN"):
            pytest.fail(f"wrote new golden {golden}; review and commit it")
    assert text == golden.read_text(), f"rendered output changed: UPDATE_GOLDEN=1 and review the diff of {golden}"


@pytest.mark.parametrize("stem", CLOUD_EXAMPLES)
def test_every_object_validates(stem: str) -> None:
    need_input(CRD_PATH, "the PyTorchJob CRD schema check")
    validate_all(render(plan_for(stem)))


def test_strict_walk_catches_unknown_fields() -> None:
    need_input(CRD_PATH, "the PyTorchJob CRD schema check")
    job = job_of(render(plan_for("aws-deepfm-p4d")))
    job["spec"]["runPolicy"]["cleanupPolicy"] = "All"
    with pytest.raises(AssertionError, match="cleanupPolicy"):
        validate_pytorchjob(job)


@pytest.mark.parametrize("stem,instance,efa", [
    ("aws-deepfm-p4d", "p4d.24xlarge", 4),
    ("aws-auto-h100", None, 32),
])
def test_efa_devices(stem, instance, efa) -> None:
    c = container(job_of(render(plan_for(stem))))
    assert c["resources"]["limits"]["vpc.amazonaws.com/efa"] == efa
    assert c["resources"]["limits"]["nvidia.com/gpu"] == 8
    assert not any(k.startswith("hugepages-") for k in c["resources"]["limits"])
    assert "privileged" not in json.dumps(c)


def test_p5en_gets_16_efa() -> None:
    plan = plan_for("aws-auto-h100", ("gpu: H100-80GB", "instance_type: p5en.48xlarge"))
    assert container(job_of(render(plan)))["resources"]["limits"]["vpc.amazonaws.com/efa"] == 16


def test_azure_nd_gets_ib_and_ipc_lock() -> None:
    c = container(job_of(render(plan_for("azure-din-nd96amsr"))))
    assert any(k.startswith("rdma/") for k in c["resources"]["limits"])
    assert "IPC_LOCK" in c["securityContext"]["capabilities"]["add"]


def test_a3_mega_gets_eight_nics_sidecar_and_annotations() -> None:
    job = job_of(render(plan_for("gcp-dcnv2-a3mega")))
    tmpl = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]
    nets = json.loads(tmpl["metadata"]["annotations"]["networking.gke.io/interfaces"])
    assert [n["interfaceName"] for n in nets if n["interfaceName"] != "eth0"] == [f"eth{i}" for i in range(1, 9)]
    assert any(k.startswith("devices.gke.io/container.tcpxo-daemon") for k in tmpl["metadata"]["annotations"])
    sidecars = tmpl["spec"]["initContainers"]
    assert sidecars[0]["name"] == "tcpxo-daemon" and sidecars[0]["restartPolicy"] == "Always"


@pytest.mark.parametrize("stem", CLOUD_EXAMPLES)
def test_no_forced_algo_and_debug_warn(stem) -> None:
    env = env_of(container(job_of(render(plan_for(stem)))))
    assert "NCCL_ALGO" not in env
    if stem != "local-deepfm":
        assert env["NCCL_DEBUG"] == "WARN"


def test_user_nccl_env_wins_and_info_switch() -> None:
    plan = plan_for("aws-deepfm-p4d", ("nccl:\n  env: {}", "nccl:\n  debug: INFO\n  env: {FI_EFA_USE_DEVICE_RDMA: '0', NCCL_ALGO: Ring}"))
    env = env_of(container(job_of(render(plan))))
    assert env["FI_EFA_USE_DEVICE_RDMA"] == "0" and env["NCCL_ALGO"] == "Ring" and env["NCCL_DEBUG"] == "INFO"


def test_spot_is_elastic_workers_only() -> None:
    job = job_of(render(plan_for("aws-deepfm-p4d")))
    assert set(job["spec"]["pytorchReplicaSpecs"]) == {"Worker"}
    ep = job["spec"]["elasticPolicy"]
    # Model parallel (sharded tables): the world size stays fixed, min = max = nodes.
    plan = plan_for("aws-deepfm-p4d")
    assert plan.memory.parallelism == "model"
    assert (ep["rdzvBackend"], ep["minReplicas"], ep["maxReplicas"]) == ("c10d", 4, 4)
    assert any("world size fixed" in line for line in plan.sharding.explanation)
    env = env_of(container(job))
    assert env["CHECKPOINT_DIR"] == "/data/ckpt"
    assert job["spec"]["runPolicy"]["activeDeadlineSeconds"] > 0
    assert job["metadata"]["labels"]["reclaunch-cluster"] == "criteo-deepfm"


def test_the_deadline_and_the_budget_guard_use_one_hourly_rate() -> None:
    """Issue 23.3: activeDeadlineSeconds left out the control plane the budget guard counts."""
    from reclaunch.runtime.budget import usd_per_hour

    plan = plan_for("aws-deepfm-p4d")
    deadline = job_of(render(plan))["spec"]["runPolicy"]["activeDeadlineSeconds"]
    assert plan.cost.control_plane_usd > 0
    assert deadline == int(plan.spec.budget.max_usd / usd_per_hour(plan) * 3600)


def test_data_parallel_spot_job_stays_elastic() -> None:
    plan = plan_for("aws-deepfm-p4d", ("  preset: deepfm\n", "  preset: deepfm\n  sharding: data\n"))
    ep = job_of(render(plan))["spec"]["elasticPolicy"]
    assert (ep["minReplicas"], ep["maxReplicas"]) == (2, 4)


def test_sharding_reaches_the_job_and_the_configmap() -> None:
    plan = plan_for("aws-deepfm-p4d")
    objs = render(plan)
    env = env_of(container(job_of(objs)))
    got = json.loads(env["RECLAUNCH_SHARDING"])
    assert " " not in env["RECLAUNCH_SHARDING"]                # compact JSON
    assert set(got) == {"version", "world_size", "engine", "tables"}
    assert (got["version"], got["world_size"], got["engine"]) == (1, 32, "torchrec")
    cm = next(o for o in objs if o["kind"] == "ConfigMap")
    assert json.loads(cm["data"]["sharding.json"]) == got
    keys = {"name", "rows", "dim", "pooling_factor", "feature", "sequence", "sharding_type",
            "compute_kernel", "ranks"}
    for t in got["tables"]:
        assert set(t) == keys
        assert t["sharding_type"] in ("data_parallel", "table_wise", "row_wise", "column_wise",
                                      "table_row_wise")
        assert t["compute_kernel"] == ("dense" if t["sharding_type"] == "data_parallel" else "fused")
        assert all(0 <= r < 32 for r in t["ranks"])
    assert [t["name"] for t in got["tables"]] == ["user_id", "item_id", "category", "city"]


def test_on_demand_is_master_plus_workers() -> None:
    job = job_of(render(plan_for("gcp-dcnv2-a3mega")))
    specs = job["spec"]["pytorchReplicaSpecs"]
    assert specs["Master"]["replicas"] == 1 and specs["Worker"]["replicas"] == 7
    assert "elasticPolicy" not in job["spec"]
    # TCPXO: the installer's lib dir goes ahead of the image's LD_LIBRARY_PATH, then torchrun
    cmd = container(job, "Master")["command"]
    assert cmd[:2] == ["/bin/sh", "-c"]
    first, last = cmd[2].splitlines()
    assert first == 'export LD_LIBRARY_PATH="/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"'
    assert last.startswith("exec torchrun /app/train.py")
    assert job["spec"]["nprocPerNode"] == "8"


def test_size_does_not_grow_with_nodes() -> None:
    small = to_yaml(render(plan_for("gcp-dcnv2-a3mega")))
    big_plan = plan_for("gcp-dcnv2-a3mega", ("nodes: 8", "nodes: 1000"))
    big = to_yaml(render(big_plan))
    assert len(render(big_plan)) == len(render(plan_for("gcp-dcnv2-a3mega")))
    # Replica counts and the plan's numbers change, and so does the sharding the planner picks
    # for 8000 GPUs (more tables table-row-wise), but nothing is listed per node or per rank.
    assert abs(len(big) - len(small)) < 0.1 * len(small)
    cm = next(o for o in render(big_plan) if o["kind"] == "ConfigMap")
    assert len(json.loads(cm["data"]["plan.json"])["sharding"]["per_rank"]) == 2


def test_render_cli_stdout_and_out_dir(tmp_path: Path) -> None:
    ex = str(EXAMPLES / "aws-deepfm-p4d.yaml")
    proc = subprocess.run([sys.executable, "-m", "reclaunch", "render", ex], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    kinds = [d["kind"] for d in yaml.safe_load_all(proc.stdout)]
    assert kinds == ["Namespace", "ConfigMap", "Service", "Deployment", "PyTorchJob"]
    proc = subprocess.run([sys.executable, "-m", "reclaunch", "render", ex, "--out", str(tmp_path / "m")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    files = sorted(p.name for p in (tmp_path / "m").iterdir())
    assert files == ["00-namespace-reclaunch.yaml", "01-configmap-criteo-deepfm-plan.yaml",
                     "02-service-criteo-deepfm-rdzv.yaml", "03-deployment-criteo-deepfm-rdzv.yaml",
                     "04-pytorchjob-criteo-deepfm.yaml"]


def test_tcpx_command_touches_the_exit_file() -> None:
    plan = plan_for("gcp-dcnv2-a3mega", ("instance_type: a3-megagpu-8g", "instance_type: a3-highgpu-8g"),
                    ("inter_node: tcpxo", "inter_node: tcpx"))
    job = job_of(render(plan))
    c = container(job, "Master")
    assert c["command"][:2] == ["/bin/sh", "-c"] and '[ "$rc" -eq 0 ] && touch' in c["command"][2]
    assert "torchrun /app/train.py --model dcnv2" in c["command"][2]
    if CRD_PATH.is_file():
        validate_pytorchjob(job)


@pytest.mark.parametrize("stem,efa", [("aws-deepfm-p4d", 4), ("aws-auto-h100", 32)])
def test_preflight_job_runs_where_training_runs(stem, efa) -> None:
    from reclaunch.manifests.job import preflight_job

    plan = plan_for(stem)
    pre = preflight_job(plan)
    train = job_of(render(plan))
    pre_pod = next(iter(pre["spec"]["pytorchReplicaSpecs"].values()))["template"]["spec"]
    train_pod = next(iter(train["spec"]["pytorchReplicaSpecs"].values()))["template"]["spec"]
    assert pre_pod["nodeSelector"] == train_pod["nodeSelector"]
    assert pre_pod["tolerations"] == train_pod["tolerations"]
    c = pre_pod["containers"][0]
    assert c["resources"]["limits"]["vpc.amazonaws.com/efa"] == efa
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["NCCL_DEBUG"] == "INFO" and "NCCL_ALGO" not in env
    assert pre["metadata"]["labels"]["reclaunch-cluster"] == plan.name
    if CRD_PATH.is_file():
        validate_pytorchjob(pre)


def test_render_cli_preflight_flag() -> None:
    proc = subprocess.run([sys.executable, "-m", "reclaunch", "render", str(EXAMPLES / "gcp-dcnv2-a3mega.yaml"),
                           "--preflight"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    docs = list(yaml.safe_load_all(proc.stdout))
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "PyTorchJob"] == ["mlperf-dcnv2", "mlperf-dcnv2-nccl"]


def test_render_preflight_out_dir_is_a_folder_of_its_own(tmp_path: Path) -> None:
    """`kubectl apply -f DIR` must not start the preflight beside the training job; the
    preflight folder carries what it needs to run alone (namespace, topology ConfigMap)."""
    out = tmp_path / "m"
    proc = subprocess.run([sys.executable, "-m", "reclaunch", "render",
                           str(EXAMPLES / "azure-din-nd96amsr.yaml"), "--preflight", "--out",
                           str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    main = [yaml.safe_load(p.read_text()) for p in sorted(out.glob("*.yaml"))]
    pre = [yaml.safe_load(p.read_text()) for p in sorted((out / "preflight").glob("*.yaml"))]
    assert [d["metadata"]["name"] for d in main if d["kind"] == "PyTorchJob"] == ["din-spot"]
    assert [d["kind"] for d in pre] == ["Namespace", "ConfigMap", "PyTorchJob"]
    assert pre[1]["metadata"]["name"] == "din-spot-nccl-topo"
    assert pre[2]["metadata"]["name"] == "din-spot-nccl"
    assert "apply it first, alone" in proc.stderr


def test_efa_puts_libfabric_and_the_ofi_plugin_on_the_library_path() -> None:
    c = container(job_of(render(plan_for("aws-deepfm-p4d"))))
    first, last = c["command"][2].splitlines()
    assert c["command"][:2] == ["/bin/sh", "-c"]
    for d in ("/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu", "/opt/aws-ofi-nccl/install/lib",
              "/opt/amazon/efa/lib"):
        assert d in first
    assert first.endswith('${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"')   # the image's path kept
    assert last.startswith("exec torchrun /app/train.py") and c["args"] == []
    assert "LD_LIBRARY_PATH" not in env_of(c)


def test_azure_topology_is_a_configmap_mounted_where_nccl_looks() -> None:
    objs = render(plan_for("azure-din-nd96amsr"))
    cm = next(o for o in objs if o["kind"] == "ConfigMap" and "topo.xml" in o["data"])
    c = container(job_of(objs))
    pod = job_of(objs)["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    vol = next(v for v in pod["volumes"] if v.get("configMap", {}).get("name") ==
               cm["metadata"]["name"])
    mount = next(m for m in c["volumeMounts"] if m["name"] == vol["name"])
    env = env_of(c)
    assert env["NCCL_TOPO_FILE"] == f"{mount['mountPath']}/topo.xml"
    assert env["NCCL_NET_GDR_LEVEL"] == "SYS"
    assert objs.index(cm) < objs.index(job_of(objs))


def test_spot_rendezvous_store_is_off_the_workers() -> None:
    from reclaunch.manifests import rdzv

    objs = render(plan_for("aws-deepfm-p4d"))
    job = job_of(objs)
    ep = job["spec"]["elasticPolicy"]
    svc = next(o for o in objs if o["kind"] == "Service")
    dep = next(o for o in objs if o["kind"] == "Deployment")
    assert ep["rdzvHost"] == f"{svc['metadata']['name']}.{svc['metadata']['namespace']}.svc"
    assert ep["rdzvPort"] == svc["spec"]["ports"][0]["port"] == rdzv.PORT
    assert {"key": "is_host", "value": "false"} in ep["rdzvConf"]
    pod = dep["spec"]["template"]["spec"]
    assert pod["nodeSelector"]["reclaunch.io/pool"] == "system"      # on-demand, not spot
    assert not pod.get("tolerations")
    assert svc["spec"]["selector"].items() <= dep["spec"]["template"]["metadata"]["labels"].items()
    assert "TCPStore" in pod["containers"][0]["command"][-1]
    assert pod["containers"][0]["image"] == container(job)["image"]
    on_demand = render(plan_for("gcp-dcnv2-a3mega"))
    assert not any(o["kind"] in ("Service", "Deployment") for o in on_demand)


def test_single_node_job_requests_no_fabric_devices() -> None:
    plan = plan_for("aws-deepfm-p4d", ("nodes: 4", "nodes: 1"), ("min_nodes: 2", "min_nodes: 1"),
                    ("max_nodes: 4", "max_nodes: 1"))
    c = container(job_of(render(plan)))
    res = c["resources"]
    assert set(res["limits"]) == {"nvidia.com/gpu", "memory"}
    assert not any(k.startswith(("hugepages-", "vpc.amazonaws.com")) for k in res["requests"])
    env = env_of(c)
    assert "FI_EFA_USE_DEVICE_RDMA" not in env and env["NCCL_DEBUG"] == "WARN"
    assert c["command"][0] == "torchrun"
    pre = preflight_job_of(plan)
    assert set(container(pre)["resources"]["limits"]) == {"nvidia.com/gpu", "memory"}
    azure = plan_for("azure-din-nd96amsr", ("nodes: 2", "nodes: 1"), ("max_nodes: 2", "max_nodes: 1"))
    az = container(job_of(render(azure)))
    assert not any(k.startswith("rdma/") for k in az["resources"]["limits"])
    assert "securityContext" not in az and "NCCL_TOPO_FILE" not in env_of(az)


def preflight_job_of(plan):
    from reclaunch.manifests.job import preflight_job

    return preflight_job(plan)


@pytest.mark.parametrize("example", ["aws-deepfm-p4d.yaml", "azure-din-nd96amsr.yaml",
                                     "gcp-dcnv2-a3mega.yaml", "aws-auto-h100.yaml"])
def test_preflight_pod_is_the_training_pod_template(example):
    """Issue 11: the preflight is built by the training pod's template code, so it lands on the
    same nodes with the same fabric setup; only the main container differs."""
    from reclaunch.manifests.job import preflight_job, render
    from reclaunch.planner import make_plan
    from reclaunch.spec import load_spec

    plan = make_plan(load_spec(EXAMPLES / example))
    job = [o for o in render(plan) if o["kind"] == "PyTorchJob"][0]
    train = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]
    pre = preflight_job(plan)["spec"]["pytorchReplicaSpecs"]["Master"]["template"]
    for key in ("nodeSelector", "tolerations", "initContainers", "terminationGracePeriodSeconds"):
        assert pre["spec"].get(key) == train["spec"].get(key), key
    # the same volumes but the dataset claim (an all-reduce reads no data)
    assert pre["spec"]["volumes"] == [v for v in train["spec"]["volumes"] if v["name"] != "data"]
    assert pre["spec"]["containers"][1:] == train["spec"]["containers"][1:]      # sidecars
    assert pre["metadata"].get("annotations") == train["metadata"].get("annotations")
    tc, pc = train["spec"]["containers"][0], pre["spec"]["containers"][0]
    assert pc["volumeMounts"][0] == tc["volumeMounts"][0] == {"name": "dshm", "mountPath": "/dev/shm"}
    assert pc.get("securityContext") == tc.get("securityContext")
    assert pre["metadata"]["labels"]["reclaunch-role"] == "preflight"
