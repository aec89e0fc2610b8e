"""Issue 24's stack blockers, each read off the preview a real `up` would deploy."""

from __future__ import annotations

import dataclasses

from tests.stacks.conftest import make_plan


def _of(resources, typ):
    return [r for r in resources if r["type"] == typ]


def _with_api_cidrs(case, cidrs):
    plan = make_plan(case)
    spec = plan.spec.model_copy(update={"security": plan.spec.security.model_copy(
        update={"api_cidrs": cidrs})})
    return dataclasses.replace(plan, spec=spec)


def test_aks_authorized_ranges_carry_the_nat_gateway_ip():
    from reclaunch.providers import preview_plan as preview

    res = preview(_with_api_cidrs("azure", ["203.0.113.7/32"]))
    nat_ip = _of(res, "azure-native:network:PublicIPAddress")
    assert len(nat_ip) == 1
    aks = _of(res, "azure-native:containerservice:ManagedCluster")[0]["inputs"]
    ranges = aks["apiServerAccessProfile"]["authorizedIPRanges"]
    assert ranges == ["203.0.113.7/32", "198.51.100.10/32"]   # the caller, then the NAT


def test_gpu_groups_have_their_own_role_and_access_entry(previews):
    _, res = previews("aws")
    system_roles = {r["inputs"]["nodeRoleArn"] for r in _of(res, "aws:eks/nodeGroup:NodeGroup")}
    entries = _of(res, "aws:eks/accessEntry:AccessEntry")
    assert entries and all(e["inputs"]["type"] == "EC2_LINUX" for e in entries)
    # EKS makes the managed node group's entry itself: an explicit one for the same role 409s.
    assert not {e["inputs"]["principalArn"] for e in entries} & system_roles
    profile = _of(res, "aws:iam/instanceProfile:InstanceProfile")[0]["inputs"]
    assert profile["role"] == "criteo-deepfm-gpu-node-role"
    assert [e["inputs"]["principalArn"] for e in entries] == [
        "arn:mock:aws:iam/role:Role:criteo-deepfm-gpu-node-role"]


def _sized(case, size):
    plan = make_plan(case)
    storage = plan.spec.storage.model_copy(update={"size": size})
    return dataclasses.replace(plan, spec=plan.spec.model_copy(update={"storage": storage}))


def test_filestore_zonal_sizes_are_ones_filestore_sells():
    from stacks.gcp.program import filestore_gib

    tib = 2**40
    assert filestore_gib(_sized("gcp", 1 * tib)) == 1024
    assert filestore_gib(_sized("gcp", int(9.5 * tib))) == 9728          # 256 GiB steps
    assert filestore_gib(_sized("gcp", int(9.9 * tib))) == 10240         # past 9.75 TiB
    assert filestore_gib(_sized("gcp", 11 * tib)) == 12800               # 12.5 TiB, not 11
    assert filestore_gib(_sized("gcp", 100 * tib)) == 102400


def test_aws_subnets_are_placed_by_zone_id_skipping_what_eks_refuses():
    import pytest

    from reclaunch.errors import ProviderError
    from stacks.aws.network import cluster_zone_ids

    plan = make_plan("aws")
    names, ids = ["us-east-1a", "us-east-1b", "us-east-1c"], ["use1-az6", "use1-az1", "use1-az2"]
    spec_zone = plan.zones[0] if plan.zones else None
    if spec_zone:
        assert cluster_zone_ids(plan, names, ids)[0] == ids[names.index(spec_zone)]
    free = dataclasses.replace(plan, zones=[])
    assert cluster_zone_ids(free, names, ids) == ids
    # The spec's zone is use1-az3 in this account: excluded from the answer, so refused.
    bad = dataclasses.replace(plan, zones=["us-east-1e"])
    with pytest.raises(ProviderError, match="use1-az3"):
        cluster_zone_ids(bad, names, ids)


def test_aws_preview_subnets_name_zone_ids(previews):
    _, res = previews("aws")
    subnets = [r["inputs"] for r in _of(res, "aws:ec2/subnet:Subnet")]
    assert subnets and all("availabilityZoneId" in s and "availabilityZone" not in s
                           for s in subnets)


def test_prerequisites_name_the_cli_each_kubeconfig_execs():
    from stacks import manual_prerequisites

    for case, tool in (("aws", "`aws eks get-token`"), ("gcp", "gke-gcloud-auth-plugin"),
                       ("azure", "kubelogin")):
        assert any(ln.startswith("tools:") and tool in ln
                   for ln in manual_prerequisites(make_plan(case))), case


def test_gke_exclusion_starts_ahead_and_is_fixed_at_creation(monkeypatch):
    import datetime as dt

    import pulumi_gcp

    from reclaunch.providers import preview_plan as preview
    from stacks.gcp.program import maintenance_policy

    plan = make_plan("gcp")
    now = dt.datetime(2026, 12, 1, 9, 59, 30, tzinfo=dt.timezone.utc)
    excl = maintenance_policy(plan, now=now)["maintenance_exclusions"][0]
    start = dt.datetime.strptime(excl["start_time"], "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=dt.timezone.utc)
    assert start > now                     # GKE refuses a start in the past
    seen = {}

    class Spy(pulumi_gcp.container.Cluster):
        def __init__(self, *args, **kw):
            seen["ignore"] = list(getattr(kw.get("opts"), "ignore_changes", None) or [])
            super().__init__(*args, **kw)
    monkeypatch.setattr(pulumi_gcp.container, "Cluster", Spy)
    preview(plan)
    assert "maintenancePolicy" in seen["ignore"]   # a re-run neither diffs nor moves it


def test_spot_asgs_drain_on_interruption_through_the_nth_queue(previews):
    import json

    from stacks.aws.interruption import EVENT_PATTERNS, managed_tag
    from stacks.policy import check

    plan, res = previews("aws")                   # spot with on-demand fallback
    assert plan.spot
    queue = _of(res, "aws:sqs/queue:Queue")
    rules = _of(res, "aws:cloudwatch/eventRule:EventRule")
    assert len(queue) == 1 and len(rules) == len(EVENT_PATTERNS) == 5
    assert {"EC2 Spot Instance Interruption Warning"} <= {
        t for r in rules for t in json.loads(r["inputs"]["eventPattern"])["detail-type"]}
    hooks = _of(res, "aws:autoscaling/lifecycleHook:LifecycleHook")
    assert {h["inputs"]["autoscalingGroupName"] for h in hooks} == {
        "criteo-deepfm-gpu-spot", "criteo-deepfm-gpu-od"}
    assert all(h["inputs"]["lifecycleTransition"] == "autoscaling:EC2_INSTANCE_TERMINATING"
               for h in hooks)
    nth = next(r for r in _of(res, "kubernetes:helm.sh/v3:Release")
               if r["inputs"]["chart"].endswith("aws-node-termination-handler"))["inputs"]
    assert nth["values"]["enableSqsTerminationDraining"] is True
    assert nth["values"]["managedTag"] == managed_tag(plan)
    asg = _of(res, "aws:autoscaling/group:Group")[0]["inputs"]
    assert managed_tag(plan) in {t["key"] for t in asg["tags"]}
    pia = {r["inputs"]["serviceAccount"] for r in _of(res, "aws:eks/podIdentityAssociation:PodIdentityAssociation")}
    assert "aws-node-termination-handler" in pia
    assert check(plan, res) == []


def test_gke_secrets_are_envelope_encrypted_with_our_kms_key(previews):
    _, res = previews("gcp")
    key = _of(res, "gcp:kms/cryptoKey:CryptoKey")
    grant = _of(res, "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember")
    assert len(key) == 1 and len(grant) == 1
    assert grant[0]["inputs"]["role"] == "roles/cloudkms.cryptoKeyEncrypterDecrypter"
    assert grant[0]["inputs"]["member"] == (
        "serviceAccount:service-123456789012@container-engine-robot.iam.gserviceaccount.com")
    cluster = _of(res, "gcp:container/cluster:Cluster")[0]["inputs"]
    assert cluster["databaseEncryption"]["state"] == "ENCRYPTED"
    assert cluster["databaseEncryption"]["keyName"]
    ring = _of(res, "gcp:kms/keyRing:KeyRing")[0]["inputs"]
    assert ring["location"] == "us-central1"


def test_aks_secrets_are_envelope_encrypted_with_our_key_vault_key(previews):
    """Issue 24: AKS envelope encryption (KMS plugin with a Key Vault key of ours); the
    cluster identity may use the key before the cluster exists; the vault is RBAC-only and
    purge-protected; the key id reaches the cluster's security profile."""
    from stacks.policy import check

    plan, res = previews("azure")
    vault = _of(res, "azure-native:keyvault:Vault")
    key = _of(res, "azure-native:keyvault:Key")
    assert len(vault) == 1 and len(key) == 1
    props = vault[0]["inputs"]["properties"]
    assert props["enableRbacAuthorization"] is True and props["enablePurgeProtection"] is True
    assert key[0]["inputs"]["properties"]["kty"] == "RSA"
    grants = [r for r in _of(res, "azure-native:authorization:RoleAssignment")
              if r["inputs"]["roleDefinitionId"].endswith("12338af0-0e69-4776-bea7-57ae8d297424")]
    assert len(grants) == 1 and grants[0]["inputs"]["principalType"] == "ServicePrincipal"
    aks = _of(res, "azure-native:containerservice:ManagedCluster")[0]["inputs"]
    kms = aks["securityProfile"]["azureKeyVaultKms"]
    assert kms["enabled"] is True and kms["keyVaultNetworkAccess"] == "Public"
    assert kms["keyId"].startswith("https://") and "/keys/etcd/" in kms["keyId"]
    assert check(plan, res) == []
