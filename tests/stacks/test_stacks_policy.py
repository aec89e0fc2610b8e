"""Policy checks over every preview: each failure is a finding a reviewer would block on."""

from __future__ import annotations

import pytest

from reclaunch.runtime.preview import _get

CASES = ["aws", "aws-p5", "gcp", "azure"]
WORLD = ("0.0.0.0/0", "::/0", "*", "Internet")


@pytest.mark.parametrize("case", CASES)
def test_every_taggable_resource_has_both_tags(previews, case):
    plan, resources = previews(case)
    missing = [r["name"] for r in resources if r["taggable"]
               and (r["tags"].get("reclaunch-cluster") != plan.name
                    or r["tags"].get("reclaunch-managed") != "true")]
    assert not missing, f"untagged: {missing}"
    assert sum(1 for r in resources if r["taggable"]) >= 4


def _ssh_open(rule: dict) -> bool:
    lo, hi = rule.get("fromPort", 0), rule.get("toPort", 65535)
    proto = str(rule.get("protocol", "-1"))
    covers_22 = proto in ("-1", "tcp", "6", "all") and (lo <= 22 <= hi or (lo, hi) == (0, 0))
    cidrs = rule.get("cidrBlocks", []) + rule.get("ipv6CidrBlocks", [])
    return covers_22 and any(c in WORLD for c in cidrs)


@pytest.mark.parametrize("case", CASES)
def test_no_world_open_ssh(previews, case):
    _, resources = previews(case)
    for r in resources:
        i = r["inputs"]
        for rule in i.get("ingress", []) if r["type"].startswith("aws:ec2/securityGroup") else []:
            assert not _ssh_open(rule), r["name"]
        if r["type"] == "gcp:compute/firewall:Firewall":
            ports = [p for a in i.get("allows", []) for p in a.get("ports", ["0-65535"])]
            assert not (set(i.get("sourceRanges", [])) & set(WORLD) and
                        any(p == "22" or p == "0-65535" for p in ports)), r["name"]
        for rule in i.get("securityRules", []):
            if rule.get("direction") == "Inbound" and rule.get("access") == "Allow":
                assert rule.get("sourceAddressPrefix") not in WORLD, r["name"]


@pytest.mark.parametrize("case", CASES)
def test_no_public_ips_on_gpu_nodes(previews, case):
    _, resources = previews(case)
    for r in resources:
        i = r["inputs"]
        # No public address asked for; none given by a subnet (EC2 refuses the key, even
        # "false", on a launch with several interfaces: stacks/aws/api_rules.py).
        for nic in i.get("networkInterfaces", []):
            assert str(nic.get("associatePublicIpAddress", "false")).lower() == "false", r["name"]
        if r["type"] == "aws:ec2/subnet:Subnet":
            assert not i.get("mapPublicIpOnLaunch"), r["name"]
        if r["type"] == "azure-native:containerservice:AgentPool":
            assert i.get("enableNodePublicIP") is False, r["name"]
        if r["type"] == "gcp:container/cluster:Cluster":
            assert i["privateClusterConfig"]["enablePrivateNodes"] is True
        if r["type"] == "gcp:container/nodePool:NodePool" and r["name"].endswith(("gpu",)):
            assert i["networkConfig"]["enablePrivateNodes"] is True


@pytest.mark.parametrize("case", CASES)
def test_volumes_encrypted_and_imdsv2(previews, case):
    plan, resources = previews(case)
    for r in resources:
        i = r["inputs"]
        if r["type"] == "aws:ec2/launchTemplate:LaunchTemplate":
            assert i["metadataOptions"]["httpTokens"] == "required", r["name"]
            for bd in i["blockDeviceMappings"]:
                assert str(bd["ebs"]["encrypted"]).lower() == "true", r["name"]
        if r["type"] == "aws:efs/fileSystem:FileSystem":
            assert i["encrypted"] is True
        if r["type"] == "aws:fsx/lustreFileSystem:LustreFileSystem":
            assert i.get("kmsKeyId")
        if r["type"] == "azure-native:containerservice:AgentPool":   # default: on (preview)
            assert i["enableEncryptionAtHost"] is (plan.spec.security.encryption_at_host
                                                   is not False)
        if r["type"] == "azure-native:storage:StorageAccount":
            assert _get(i, "encryption.services.file.enabled") is True


@pytest.mark.parametrize("case", CASES)
def test_cluster_version_pinned_and_addons(previews, case):
    from stacks.versions import fallback

    plan, resources = previews(case)
    versions = {r["key"].get("version") for r in resources
                if r["type"] in ("aws:eks/cluster:Cluster", "gcp:container/cluster:Cluster",
                                 "azure-native:containerservice:ManagedCluster")}
    assert versions == {fallback(plan)}   # a preview shows the dated table's choice
    names = {r["name"] for r in resources}
    assert any(n.endswith("training-operator") for n in names)
    for r in resources:
        if r["type"] == "kubernetes:helm.sh/v3:Release":
            # A chart from a repository, or an OCI reference (aws-node-termination-handler).
            assert r["inputs"]["version"] and (
                (r["inputs"].get("repositoryOpts") or {}).get("repo")
                or r["inputs"]["chart"].startswith("oci://"))


def test_resource_count_does_not_grow_with_nodes(previews):
    _, small = previews("aws", nodes=8, min_nodes=8, max_nodes=8)
    _, big = previews("aws", nodes=512, min_nodes=512, max_nodes=512)
    assert len(small) == len(big)
    assert sorted(r["type"] for r in small) == sorted(r["type"] for r in big)
    _, gsmall = previews("gcp", nodes=8, min_nodes=8, max_nodes=8)
    _, gbig = previews("gcp", nodes=512, min_nodes=512, max_nodes=512)
    assert len(gsmall) == len(gbig)


@pytest.mark.parametrize("case", CASES)
def test_every_policy_holds(previews, case):
    from stacks.policy import check

    plan, resources = previews(case)
    assert check(plan, resources) == []
