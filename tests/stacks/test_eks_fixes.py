"""The EKS stack as EC2, EKS and IAM take it (the stacks review, items 1, 7, 8 and the two
lower ones), read off the preview `up` deploys."""

from __future__ import annotations

import pytest

LT = "aws:ec2/launchTemplate:LaunchTemplate"


def _of(resources, typ):
    return [r for r in resources if r["type"] == typ]


def _named(resources, suffix):
    return next(r for r in resources if r["name"].endswith(suffix))


@pytest.mark.parametrize("case,cards", [("aws", 4), ("aws-p5", 32)])
def test_efa_launch_templates_are_ones_ec2_launches(previews, case, cards):
    _, res = previews(case)
    gpu = [r for r in _of(res, LT) if "-gpu-" in r["name"]]
    assert gpu
    for lt in gpu:
        nics = lt["inputs"]["networkInterfaces"]
        # docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html
        assert [(n["networkCardIndex"], n["deviceIndex"], n["interfaceType"]) for n in nics] == \
            [(0, 0, "efa")] + [(i, 0, "efa-only") for i in range(1, cards)]
        assert not any("associatePublicIpAddress" in n for n in nics)
        assert lt["engine"] == []


def test_the_ec2_rule_refuses_a_public_ip_key_on_several_interfaces():
    from stacks.aws.api_rules import refusals

    old = {"networkInterfaces": [
        {"deviceIndex": 0, "networkCardIndex": 0, "interfaceType": "efa",
         "associatePublicIpAddress": "false"},
        {"deviceIndex": 1, "networkCardIndex": 1, "interfaceType": "efa-only",
         "associatePublicIpAddress": "false"}]}
    found = refusals(LT, "x-gpu-lt", old)
    assert any("InvalidParameterCombination" in f for f in found), found
    one = {"networkInterfaces": [{"deviceIndex": 0, "associatePublicIpAddress": "false"}]}
    assert refusals(LT, "x-system-lt", one) == []
    efa_only_primary = {"networkInterfaces": [{"deviceIndex": 0, "networkCardIndex": 0,
                                               "interfaceType": "efa-only"}]}
    assert any("primary" in f for f in refusals(LT, "x-lt", efa_only_primary))


def _deps(r):
    return set(r["depends_on"])


def test_eks_waits_for_its_rights_and_its_egress(previews):
    _, res = previews("aws")
    urn = {r["name"]: r["urn"] for r in res}
    attached = {r["name"]: r["urn"] for r in
                _of(res, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")}
    egress = {r["urn"] for r in res if r["type"] == "aws:ec2/natGateway:NatGateway"
              or r["name"].startswith("criteo-deepfm-private-rta")}
    assert len(egress) == 4                       # the NAT and three private subnets' routes

    def rights(role):
        return {u for n, u in attached.items() if n.startswith(f"criteo-deepfm-{role}-")}

    cluster = _named(res, "-eks")
    assert rights("cluster-role") and rights("cluster-role") <= _deps(cluster)
    system = _of(res, "aws:eks/nodeGroup:NodeGroup")[0]
    assert rights("node-role") and rights("node-role") | egress <= _deps(system)
    for group in _of(res, "aws:autoscaling/group:Group"):
        assert rights("gpu-node-role") | egress <= _deps(group), group["name"]
    # terraform-aws-eks before_compute: networking and pod identity before any node; coredns
    # after the system node group (a Deployment with nowhere to run is a degraded add-on).
    assert urn["criteo-deepfm-system"] in _deps(_named(res, "-coredns"))
    for early in ("vpc-cni", "kube-proxy", "eks-pod-identity-agent"):
        assert urn[f"criteo-deepfm-{early}"] in _deps(system)
        assert urn["criteo-deepfm-system"] not in _deps(_named(res, f"-{early}"))


def test_node_roles_pull_images_only_and_the_cni_has_its_own_role(previews):
    _, res = previews("aws")
    policies: dict[str, set] = {}
    for a in _of(res, "aws:iam/rolePolicyAttachment:RolePolicyAttachment"):
        policies.setdefault(a["inputs"]["role"], set()).add(a["inputs"]["policyArn"].split("/")[-1])
    for role in ("criteo-deepfm-node-role", "criteo-deepfm-gpu-node-role"):
        # docs.aws.amazon.com/eks/latest/userguide/create-node-role.html
        assert policies[role] == {"AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryPullOnly",
                                  "AmazonSSMManagedInstanceCore"}
    assert policies["criteo-deepfm-cni-role"] == {"AmazonEKS_CNI_Policy"}
    cni = _named(res, "-vpc-cni")["inputs"]
    assert cni["podIdentityAssociations"] == [
        {"roleArn": "arn:mock:aws:iam/role:Role:criteo-deepfm-cni-role",
         "serviceAccount": "aws-node"}]
    trust = _named(res, "cni-role")["inputs"]["assumeRolePolicy"]
    assert "pods.eks.amazonaws.com" in trust


def test_the_control_plane_log_group_is_the_stacks(previews):
    _, res = previews("aws")
    group = _of(res, "aws:cloudwatch/logGroup:LogGroup")
    assert [g["inputs"]["name"] for g in group] == ["/aws/eks/criteo-deepfm/cluster"]
    assert group[0]["tags"]["reclaunch-cluster"] == "criteo-deepfm"
    assert group[0]["urn"] in _deps(_named(res, "-eks"))


def test_a_forty_character_name_makes_names_aws_takes(previews):
    from stacks.aws.api_rules import refusals

    long = "a-very-long-cluster-name-for-testing-x40"
    plan, _ = previews("aws")
    _, res = previews("aws", spec=plan.spec.model_copy(update={"name": long}))
    assert [e for r in res for e in r["engine"]] == []
    # the same rule on the name main made (64 chars before Pulumi's 8): refused
    rule = "aws:cloudwatch/eventRule:EventRule"
    assert refusals(rule, f"{long}-nth-state-change", {}) and \
        not refusals(rule, f"{long}-nth-state-change"[:56], {})


def test_aws_values_are_checked_against_botocore():
    from stacks.aws.api_rules import refusals

    bad = {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}], "capacityType": "SPOT"}
    found = refusals("aws:eks/nodeGroup:NodeGroup", "x", bad)
    assert len(found) == 1 and "taints[0].effect: 'NoSchedule'" in found[0], found
    assert "NO_SCHEDULE" in found[0] and "botocore" in found[0]
    assert refusals(LT, "x-lt", {"instanceType": "p4d.24xlarge"}) == []
    assert refusals(LT, "x-lt", {"instanceType": "p4d.24xl"})
