"""The provider-side faults of issue 13, one test each: what a real `pulumi up` would hit."""

from __future__ import annotations

import base64
import dataclasses
import json

import pytest

from .conftest import make_plan


def _of(res, typ):
    return [r for r in res if r["type"] == typ]


# ---- AWS: capacity failures reach the fallback --------------------------------------------

class FakeASG:
    def __init__(self, acts):
        self.acts, self.asked = acts, []

    def describe_scaling_activities(self, AutoScalingGroupName, MaxRecords):
        self.asked.append(AutoScalingGroupName)
        return {"Activities": self.acts.get(AutoScalingGroupName, [])}


def test_failed_scaling_activities_become_a_capacity_error():
    from reclaunch.runtime.infra import InfraError, with_diagnosis
    from reclaunch.providers.aws.provider import ERRORS, scaling_failures
    from reclaunch.providers.kubecloud import CAPACITY, classify

    plan = make_plan("aws")
    client = FakeASG({"criteo-deepfm-gpu-spot": [
        {"StatusCode": "Successful", "StatusMessage": ""},
        {"StatusCode": "Failed", "StatusMessage": "Could not launch On-Demand Instances. "
         "InsufficientInstanceCapacity - We currently do not have sufficient p4d.24xlarge "
         "capacity in the Availability Zone you requested (us-east-1a)."}]})
    text = scaling_failures(plan, client=client)
    assert client.asked == ["criteo-deepfm-gpu-spot", "criteo-deepfm-gpu-od"]
    assert text.startswith("criteo-deepfm-gpu-spot: Failed: Could not launch")
    timeout = InfraError("provisioning failed: waiting for capacity: timeout", "timeout")
    assert classify(ERRORS, timeout.output) is None          # what the engine alone says
    err = with_diagnosis(timeout, lambda p: scaling_failures(p, client=client), plan)
    assert classify(ERRORS, err.output) == CAPACITY and "InsufficientInstanceCapacity" in str(err)
    assert with_diagnosis(timeout, lambda p: "", plan) is timeout


def test_groups_wait_for_capacity_and_template_tags_describe_the_nodes(previews):
    plan, res = previews("aws-p5")
    groups = {r["name"]: r["inputs"] for r in _of(res, "aws:autoscaling/group:Group")}
    od = groups["dlrm-auto-gpu-od"]
    assert od["waitForCapacityTimeout"] != "0"
    tags = {t["key"]: t["value"] for t in od["tags"]}
    tpl = "k8s.io/cluster-autoscaler/node-template/"
    assert tags[tpl + "resources/vpc.amazonaws.com/efa"] == "32"
    # the pages the EFA node image reserves at boot: 110 x 192 vCPUs + 1 of 2 MiB (a p5's
    # published describe-node shows 42242Mi), and the memory left beside them
    assert tags[tpl + "resources/hugepages-2Mi"] == "42242Mi"
    assert int(tags[tpl + "resources/memory"].removesuffix("Mi")) < 2004265   # the p5's real one
    assert tags[tpl + "resources/nvidia.com/gpu"] == "8"
    assert tags[tpl + "label/vpc.amazonaws.com/efa.present"] == "true"
    assert tags[tpl + "label/nvidia.com/gpu.present"] == "true"
    assert tags[tpl + "taint/nvidia.com/gpu"] == "present:NoSchedule"
    assert len(od["tags"]) <= 50          # the ASG tag limit


def test_gpu_nodes_register_the_labels_the_plugins_need(previews):
    _, res = previews("aws")
    lt = next(r["inputs"] for r in _of(res, "aws:ec2/launchTemplate:LaunchTemplate")
              if r["name"].endswith("gpu-spot-lt"))
    ud = base64.b64decode(lt["userData"]).decode()
    assert "vpc.amazonaws.com/efa.present=true" in ud and "nvidia.com/gpu.present=true" in ud
    # the EFA installer's boot-time pages, set by the stack too (110 x 96 vCPUs + 1): the node
    # holds what the model subtracts whether or not its image's efa-config reserves them
    assert "vm.nr_hugepages = 10561" in ud
    assert "node.kubernetes.io/instance-type=" not in ud  # the kubelet sets that one itself
    assert "kmsKeyId" not in lt["blockDeviceMappings"][0]["ebs"]   # aws/ebs: the ASG may use it


def test_autoscaler_policy_is_scoped_to_our_groups(previews):
    _, res = previews("aws")
    # By name: Pulumi registers independent resources in no fixed order.
    doc = json.loads(next(r for r in _of(res, "aws:iam/rolePolicy:RolePolicy")
                          if r["name"].endswith("autoscaler-policy"))["inputs"]["policy"])
    mutate = next(s for s in doc["Statement"] if "autoscaling:SetDesiredCapacity" in s["Action"])
    assert all(r.endswith(("/criteo-deepfm-gpu-spot", "/criteo-deepfm-gpu-od"))
               for r in mutate["Resource"])
    attached = [r["inputs"]["policyArn"] for r in
                _of(res, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")]
    assert not any("AutoScalingFullAccess" in a for a in attached)


# ---- API endpoint access ------------------------------------------------------------------

def test_caller_address_becomes_the_api_allow_list():
    from reclaunch.providers.caller import access_config

    plan = make_plan("aws")
    assert access_config(plan, fetch=lambda url: "203.0.113.7\n") == {
        "reclaunch:apiCidrs": '["203.0.113.7/32"]'}
    from reclaunch.errors import ProviderError

    def boom(url):
        raise OSError("offline")
    for bad in (lambda url: "<html>", boom):
        with pytest.raises(ProviderError, match="security.api_cidrs"):
            access_config(plan, fetch=bad)
    spec = plan.spec.model_copy(update={"security": plan.spec.security.model_copy(
        update={"api_cidrs": ["198.51.100.0/24"]})})
    assert access_config(dataclasses.replace(plan, spec=spec), fetch=boom) == {}


def test_preview_without_cidrs_is_private_everywhere(previews):
    for case in ("aws", "azure", "gcp"):
        _, res = previews(case)
        for r in res:
            i = r["inputs"]
            if r["type"] == "aws:eks/cluster:Cluster":
                assert i["vpcConfig"]["endpointPublicAccess"] is False
            if r["type"] == "azure-native:containerservice:ManagedCluster":
                assert i["apiServerAccessProfile"] == {"enablePrivateCluster": True}
            if r["type"] == "gcp:container/cluster:Cluster":
                assert i["privateClusterConfig"]["enablePrivateEndpoint"] is True


# ---- Azure access --------------------------------------------------------------------------

def test_azure_grants_the_caller_and_the_cluster_identity(previews):
    _, res = previews("azure")
    roles = {r["name"]: r["inputs"] for r in _of(res, "azure-native:authorization:RoleAssignment")}
    admin = roles["din-spot-rbac-admin"]
    assert admin["roleDefinitionId"].endswith("b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b")
    assert admin["scope"] == "din-spot-aks-id"
    net = roles["din-spot-net-contributor"]
    assert net["roleDefinitionId"].endswith("4d97b98b-1d4f-4787-a291-c67834d212e7")
    assert net["scope"] == "din-spot-nodes-id"
    aks = _of(res, "azure-native:containerservice:ManagedCluster")[0]["inputs"]
    assert aks["autoUpgradeProfile"] == {"upgradeChannel": "none", "nodeOSUpgradeChannel": "None"}


def test_kubeconfig_logs_in_without_a_prompt():
    import yaml

    from stacks.azure.program import non_interactive

    cfg = yaml.safe_dump({"users": [{"name": "u", "user": {"exec": {
        "command": "kubelogin", "args": ["get-token", "--login", "devicecode", "--server-id",
                                         "6dae42f8-4368-4678-94ff-3960e28e3630",
                                         "--client-id", "x", "--tenant-id", "t"]}}}]})
    out = yaml.safe_load(non_interactive(cfg))["users"][0]["user"]["exec"]["args"]
    assert out == ["get-token", "--login", "azurecli", "--server-id",
                   "6dae42f8-4368-4678-94ff-3960e28e3630"]


def test_principal_type_from_the_cli():
    from types import SimpleNamespace

    from reclaunch.providers.azure.provider import principal_type

    assert principal_type(lambda *a, **k: SimpleNamespace(stdout="servicePrincipal\n")) == \
        "ServicePrincipal"
    assert principal_type(lambda *a, **k: SimpleNamespace(stdout="user\n")) == "User"


# ---- GCP -----------------------------------------------------------------------------------

def test_gke_gpu_pools_never_upgrade_and_spot_is_preferred_by_a_compute_class(previews):
    plan, _ = previews("gcp")
    spot_plan = dataclasses.replace(plan, spot=True, spec=plan.spec.model_copy(update={
        "spot": plan.spec.spot.model_copy(update={"enabled": True})}))
    from reclaunch.providers import preview_plan as preview

    res = preview(spot_plan)
    cluster = _of(res, "gcp:container/cluster:Cluster")[0]["inputs"]
    assert cluster["releaseChannel"]["channel"] == "UNSPECIFIED"
    excl = cluster["maintenancePolicy"]["maintenanceExclusions"][0]
    assert excl["exclusionOptions"]["scope"] == "NO_UPGRADES"
    pools = {r["name"]: r["inputs"] for r in _of(res, "gcp:container/nodePool:NodePool")}
    for key in ("gpu-spot", "gpu-od"):
        assert pools[f"{plan.name}-{key}"]["management"]["autoUpgrade"] is False
    cc = _of(res, "kubernetes:cloud.google.com/v1:ComputeClass")[0]["inputs"]
    assert [p["nodepools"] for p in cc["spec"]["priorities"]] == [
        [f"{plan.name}-gpu-spot"], [f"{plan.name}-gpu-od"]]
    assert pools[f"{plan.name}-gpu-spot"]["nodeConfig"]["labels"][
        "cloud.google.com/compute-class"] == cc["metadata"]["name"]
    roles = {r["inputs"]["role"] for r in _of(res, "gcp:projects/iAMMember:IAMMember")}
    assert {"roles/monitoring.viewer", "roles/stackdriver.resourceMetadata.writer"} <= roles


# ---- reserved capacity ---------------------------------------------------------------------

def _with_capacity(case, **cap):
    plan = make_plan(case)
    spec = plan.spec.model_copy(update={
        "capacity": plan.spec.__class__.model_fields["capacity"].annotation.__args__[0](**cap),
        "spot": plan.spec.spot.model_copy(update={"enabled": False})})
    return dataclasses.replace(plan, spec=spec, spot=False)


def test_capacity_block_reaches_the_launch_template():
    from reclaunch.providers import preview_plan as preview

    plan = _with_capacity("aws-p5", reservation="cr-0123456789abcdef0", kind="capacity-block")
    res = preview(plan)
    lt = next(r["inputs"] for r in _of(res, "aws:ec2/launchTemplate:LaunchTemplate")
              if r["name"].endswith("gpu-lt"))
    assert lt["capacityReservationSpecification"]["capacityReservationTarget"][
        "capacityReservationId"] == "cr-0123456789abcdef0"
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert "placement" not in lt        # the block's own placement, not our group


def test_gcp_reservation_reaches_the_node_pool():
    from reclaunch.providers import preview_plan as preview

    plan = _with_capacity("gcp", reservation="a3mega-res", kind="gcp-reservation")
    gpu = next(r["inputs"] for r in _of(preview(plan), "gcp:container/nodePool:NodePool")
               if r["name"].endswith("-gpu"))
    assert gpu["nodeConfig"]["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name", "values": ["a3mega-res"]}


CAP_SPEC = """name: cap
cloud: {cloud}
region: {region}
instance_type: {it}
capacity:
  reservation: {res}
  kind: {kind}
spot: {{enabled: {spot}}}
job: {{image: x, command: [python]}}
model: {{preset: dlrm}}
"""


@pytest.mark.parametrize("cloud,region,it,res,kind,spot,expect", [
    ("aws", "us-east-1", "p5.48xlarge", "cr-0123456789abcdef0", "gcp-reservation", "false",
     "cluster.yaml:7: capacity.kind: 'gcp-reservation' is not sold on aws"),
    ("aws", "us-east-1", "p5.48xlarge", "my-block", "capacity-block", "false",
     "cluster.yaml:6: capacity.reservation: 'my-block' is not a capacity-block"),
    ("gcp", "us-central1", "a3-megagpu-8g", "res-1", "gcp-reservation", "true",
     "cluster.yaml:8: spot.enabled: a capacity reservation is on-demand"),
    ("azure", "eastus", "Standard_ND96amsr_A100_v4", "/subscriptions/s/resourceGroups/g",
     "azure-crg", "false", "cluster.yaml:6: capacity.reservation:"),
])
def test_capacity_is_validated_per_cloud_with_file_line(cloud, region, it, res, kind, spot,
                                                        expect):
    from reclaunch.errors import SpecError
    from reclaunch.spec import parse_spec

    with pytest.raises(SpecError) as exc:
        parse_spec(CAP_SPEC.format(cloud=cloud, region=region, it=it, res=res, kind=kind,
                                   spot=spot))
    assert expect in str(exc.value)


def test_planner_prices_the_reservation():
    from reclaunch.planner import make_plan as plan_of
    from reclaunch.spec import parse_spec

    text = CAP_SPEC.format(cloud="aws", region="us-east-1", it="p5.48xlarge",
                           res="cr-0123456789abcdef0", kind="odcr", spot="false")
    given = plan_of(parse_spec(text.replace("kind: odcr", "kind: odcr\n  price_usd_per_hour: 40")))
    assert given.cost.on_demand_usd_per_hour == 40 * given.nodes
    assert given.cost.price_source == "spec.capacity.price_usd_per_hour"
    unpriced = plan_of(parse_spec(text))
    assert unpriced.cost.on_demand_usd_per_hour == unpriced.offer.on_demand_usd * unpriced.nodes
    assert any("priced at the on-demand rate" in w for w in unpriced.warnings)


def test_azure_capacity_reservation_group_reaches_the_agent_pool():
    from reclaunch.providers import preview_plan as preview

    crg = ("/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/"
           "capacityReservationGroups/nd-crg")
    plan = _with_capacity("azure", reservation=crg, kind="azure-crg")
    pool = next(r["inputs"] for r in _of(preview(plan), "azure-native:containerservice:AgentPool")
                if r["name"].endswith("-gpu"))
    assert pool["capacityReservationGroupID"] == crg
    assert "proximityPlacementGroupID" not in pool
