"""Per-cloud shape: instance type and count, capacity pools, autoscaling, placement, fabric."""

from __future__ import annotations



def _of_type(resources, typ):
    return [r for r in resources if r["type"] == typ]


def test_aws_p4d_pools_spot_fallback_and_efa(previews):
    plan, res = previews("aws")
    asgs = {r["name"]: r for r in _of_type(res, "aws:autoscaling/group:Group")}
    spot, od = asgs["criteo-deepfm-gpu-spot"], asgs["criteo-deepfm-gpu-od"]
    assert (spot["inputs"]["minSize"], spot["inputs"]["maxSize"],
            spot["inputs"]["desiredCapacity"]) == (plan.min_nodes, plan.max_nodes, plan.nodes)
    assert (od["inputs"]["minSize"], od["inputs"]["maxSize"]) == (0, plan.max_nodes)
    lts = {r["name"]: r["inputs"] for r in _of_type(res, "aws:ec2/launchTemplate:LaunchTemplate")}
    spot_lt, od_lt = lts["criteo-deepfm-gpu-spot-lt"], lts["criteo-deepfm-gpu-od-lt"]
    assert spot_lt["instanceType"] == od_lt["instanceType"] == "p4d.24xlarge"
    assert spot_lt["instanceMarketOptions"]["marketType"] == "spot"
    assert "instanceMarketOptions" not in od_lt
    nics = spot_lt["networkInterfaces"]
    assert len(nics) == 4 and [n["networkCardIndex"] for n in nics] == [0, 1, 2, 3]
    assert {n["interfaceType"] for n in nics} <= {"efa", "efa-only"}
    assert spot_lt["placement"]["groupName"] == "criteo-deepfm-pg"
    pg = _of_type(res, "aws:ec2/placementGroup:PlacementGroup")
    assert pg[0]["inputs"]["strategy"] == "cluster"
    efa_sg = [r for r in _of_type(res, "aws:ec2/securityGroup:SecurityGroup")
              if r["name"].endswith("-efa")][0]["inputs"]
    assert efa_sg["ingress"][0]["self"] is True and efa_sg["egress"][0]["self"] is True
    assert len(_of_type(res, "aws:fsx/lustreFileSystem:LustreFileSystem")) == 1
    releases = {r["inputs"]["chart"] for r in _of_type(res, "kubernetes:helm.sh/v3:Release")}
    assert {"nvidia-device-plugin", "aws-efa-k8s-device-plugin", "cluster-autoscaler"} <= releases
    # GPU taint and capacity label reach the kubelet through nodeadm user data.
    import base64
    ud = base64.b64decode(spot_lt["userData"]).decode()
    assert "nvidia.com/gpu=present:NoSchedule" in ud and "reclaunch.io/capacity=spot" in ud
    assert "RAID0" in ud


def test_aws_p5_has_32_efa_interfaces(previews):
    _, res = previews("aws-p5")
    lt = [r["inputs"] for r in _of_type(res, "aws:ec2/launchTemplate:LaunchTemplate")
          if r["name"].endswith("gpu-spot-lt")][0]
    nics = lt["networkInterfaces"]
    assert len(nics) == 32 and sorted(n["networkCardIndex"] for n in nics) == list(range(32))
    # efa-acc-inst-types.html: the primary (card 0, device 0) carries ENA and EFA; every other
    # card one EFA-only interface at device index 0; no associatePublicIpAddress with several.
    assert [(n["deviceIndex"], n["interfaceType"]) for n in nics] == \
        [(0, "efa")] + [(0, "efa-only")] * 31
    assert not any("associatePublicIpAddress" in n for n in nics)


def test_aws_max_price_honoured(previews):
    plan, _ = previews("aws")
    spec = plan.spec.model_copy(update={"spot": plan.spec.spot.model_copy(
        update={"max_price": 9.5})})
    _, res = previews("aws", spec=spec)
    lt = [r["inputs"] for r in _of_type(res, "aws:ec2/launchTemplate:LaunchTemplate")
          if r["name"].endswith("gpu-spot-lt")][0]
    assert lt["instanceMarketOptions"]["spotOptions"]["maxPrice"] == "9.5"


def test_gcp_a3mega_networks_and_pool(previews):
    plan, res = previews("gcp")
    gpu_nets = [r for r in _of_type(res, "gcp:compute/network:Network")
                if "-gpu-" in r["name"]]
    assert len(gpu_nets) == 8 and {r["inputs"]["mtu"] for r in gpu_nets} == {8244}
    pools = {r["name"]: r["inputs"] for r in _of_type(res, "gcp:container/nodePool:NodePool")}
    gpu = pools["mlperf-dcnv2-gpu"]   # spot disabled: one on-demand pool
    assert set(pools) == {"mlperf-dcnv2-system", "mlperf-dcnv2-gpu"}
    assert gpu["nodeConfig"]["machineType"] == "a3-megagpu-8g"
    assert gpu["nodeConfig"]["spot"] is False
    assert gpu["initialNodeCount"] == plan.nodes
    assert gpu["autoscaling"]["totalMaxNodeCount"] == plan.max_nodes
    assert gpu["placementPolicy"]["type"] == "COMPACT"
    assert len(gpu["networkConfig"]["additionalNodeNetworkConfigs"]) == 8
    assert gpu["nodeConfig"]["guestAccelerators"][0]["type"] == "nvidia-h100-mega-80gb"
    assert gpu["nodeConfig"]["ephemeralStorageLocalSsdConfig"]["localSsdCount"] == 16
    assert gpu["nodeConfig"]["taints"][0]["key"] == "nvidia.com/gpu"
    assert len(_of_type(res, "kubernetes:networking.gke.io/v1:Network")) == 8
    assert len(_of_type(res, "gcp:filestore/instance:Instance")) == 1


def test_azure_nd_pools_ib_and_spot(previews):
    plan, res = previews("azure")
    pools = {r["name"]: r["inputs"]
             for r in _of_type(res, "azure-native:containerservice:AgentPool")}
    spot, od = pools["din-spot-gpu-spot"], pools["din-spot-gpu-od"]
    assert spot["vmSize"] == od["vmSize"] == "Standard_ND96amsr_A100_v4"
    assert spot["scaleSetPriority"] == "Spot" and spot["spotMaxPrice"] == 20
    assert od["scaleSetPriority"] == "Regular" and (od["minCount"], od["count"]) == (0, 0)
    assert (spot["minCount"], spot["maxCount"]) == (plan.min_nodes, plan.max_nodes)
    # No PPG (issue 24: LinkedAuthorizationFailed); the scale set is the IB fabric.
    assert "proximityPlacementGroupID" not in spot and "proximityPlacementGroupID" not in od
    assert not _of_type(res, "azure-native:compute:ProximityPlacementGroup")
    assert "nvidia.com/gpu=present:NoSchedule" in spot["nodeTaints"]
    charts = {r["inputs"]["chart"] for r in _of_type(res, "kubernetes:helm.sh/v3:Release")}
    assert "network-operator" in charts          # InfiniBand HCAs to pods


def test_missing_extra_names_pip_install(monkeypatch):
    import sys

    from reclaunch.errors import MissingExtraError
    from reclaunch.providers import stack_program

    import pytest
    monkeypatch.setitem(sys.modules, "pulumi_aws", None)
    program = stack_program("aws")
    with pytest.raises(MissingExtraError) as exc:
        program(None)
    assert "pip install 'reclaunch[aws]'" in str(exc.value)


def test_importing_stacks_pulls_no_sdk():
    import subprocess
    import sys

    code = ("import sys, stacks, stacks.common, reclaunch.runtime.preview, stacks.aws.program;"
            "bad=[m for m in sys.modules if m.startswith(('pulumi_', 'pulumi'))];"
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_render_preview_text(previews):
    from reclaunch.ui.preview import preview_text

    _, res = previews("azure")
    text = preview_text(res)
    assert "Standard_ND96amsr_A100_v4" in text and "MISSING" not in text


def test_eks_autoscaler_waits_for_a_node_as_long_as_the_plan_says(previews):
    """--max-node-provision-time is set on purpose (the CA default is 15 min), from the plan's
    own figure, and leaves the modelled GPU node boot-to-Ready + driver time 2x over."""
    from reclaunch.planner.startup import provision_timeout, target_steps

    plan, res = previews("aws")
    ca = next(r for r in _of_type(res, "kubernetes:helm.sh/v3:Release")
              if r["inputs"]["chart"] == "cluster-autoscaler")["inputs"]["values"]
    seconds, _ = provision_timeout("aws")
    assert ca["extraArgs"]["max-node-provision-time"] == f"{seconds / 60:g}m" != "15m"
    node = sum(s["seconds"] for s in target_steps("aws")["steps"] if s["billed"])
    assert seconds >= 2 * node
    assert any("max-node-provision-time" in n for n in plan.startup.notes)   # a spot plan
