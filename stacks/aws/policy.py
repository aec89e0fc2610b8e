"""stacks/policy.py's policies over what the EKS stack creates: one function per policy,
named after it (stacks.policy.rules_of reads them for StackFacts.policy_rules)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stacks.policy import keeps_checkpoints, owns_only, ssh_rule_open, statements, world_open

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.planner.model import Plan

# Managed policies that grant a whole service (or everything) over the whole account where a
# scoped statement does the job.
BROAD_POLICIES = ("AdministratorAccess", "PowerUserAccess", "AutoScalingFullAccess",
                  "AmazonEC2FullAccess", "IAMFullAccess")
READ_ONLY_PREFIXES = ("Describe", "Get", "List")
LIFECYCLE = "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration"
BUCKET_TYPES = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")


def control_plane_private(plan: "Plan", rs: list[dict]) -> list[str]:
    out = []
    for r in rs:
        if r["type"] == "aws:eks/cluster:Cluster":
            vpc = r["inputs"].get("vpcConfig") or {}
            # EKS's default publicAccessCidrs is 0.0.0.0/0 when the endpoint is public.
            cidrs = vpc.get("publicAccessCidrs") or ["0.0.0.0/0"]
            if vpc.get("endpointPublicAccess", True) and world_open(cidrs, plan):
                out.append(f"{r['name']}: EKS API endpoint open to {cidrs}")
    return out


def no_world_ssh(plan: "Plan", rs: list[dict]) -> list[str]:
    return [f"{r['name']}: SSH open to the world" for r in rs
            if r["type"].startswith("aws:ec2/securityGroup")
            for rule in r["inputs"].get("ingress") or [] if ssh_rule_open(rule)]


def _key_usable_by_asg(rs: list[dict], key_ref: str) -> bool:
    """A customer key in a launch template must let the Auto Scaling service-linked role use
    it (AWS doc: key-policy-requirements-EBS-encryption)."""
    for r in rs:
        if r["type"] == "aws:kms/key:Key" and r["name"] in key_ref:
            return "AWSServiceRoleForAutoScaling" in str(r["inputs"].get("policy") or "")
    return False


def volumes_encrypted(plan: "Plan", rs: list[dict]) -> list[str]:
    out = []
    for r in rs:
        i, t = r["inputs"], r["type"]
        if t == "aws:ec2/launchTemplate:LaunchTemplate":
            for bd in i.get("blockDeviceMappings") or []:
                ebs = bd.get("ebs") or {}
                if str(ebs.get("encrypted")).lower() != "true":
                    out.append(f"{r['name']}: EBS volume not encrypted")
                elif ebs.get("kmsKeyId") and not _key_usable_by_asg(rs, str(ebs["kmsKeyId"])):
                    out.append(f"{r['name']}: EBS key not usable by the Auto Scaling "
                               "service-linked role (launches would fail)")
        if t == "aws:efs/fileSystem:FileSystem" and i.get("encrypted") is not True:
            out.append(f"{r['name']}: EFS not encrypted")
        if t == "aws:fsx/lustreFileSystem:LustreFileSystem" and not i.get("kmsKeyId"):
            out.append(f"{r['name']}: FSx without a customer key")
    return out


def scoped_iam(plan: "Plan", rs: list[dict]) -> list[str]:
    out = []
    for r in rs:
        i, t = r["inputs"], r["type"]
        if t == "aws:iam/rolePolicyAttachment:RolePolicyAttachment" and \
                str(i.get("policyArn", "")).rsplit("/", 1)[-1] in BROAD_POLICIES:
            out.append(f"{r['name']}: {i['policyArn']} grants a whole service account-wide")
        if t in ("aws:iam/rolePolicy:RolePolicy", "aws:iam/policy:Policy"):
            for st in statements(i.get("policy")):
                acts = _list(st.get("Action"))
                res = _list(st.get("Resource"))
                writes = [a for a in acts if not a.split(":")[-1].startswith(READ_ONLY_PREFIXES)]
                if st.get("Effect") == "Allow" and "*" in res and writes:
                    out.append(f"{r['name']}: {', '.join(writes)} on every resource")
    return out


def gpu_pools_pinned(plan: "Plan", rs: list[dict]) -> list[str]:
    # An EKS managed node group changes its AMI only on an update someone starts (UpdateNodegroupVersion):
    # there is no auto-upgrade setting to find turned on.
    return []


def _refs(rs: list[dict], type_: str, name: str) -> list[dict]:
    """Resources of type_ whose `bucket` input is the bucket `name` (by mock id or name)."""
    return [r for r in rs if r["type"] == type_ and str(r["inputs"].get("bucket", "")).startswith(name)]


def _list(v: Any) -> list:
    return [v] if isinstance(v, str) else list(v or [])


def bucket_private(plan: "Plan", rs: list[dict]) -> list[str]:
    """A created bucket: a full public access block, default encryption, a lifecycle rule
    that aborts torn multipart uploads."""
    out = []
    for r in rs:
        if r["type"] != "aws:s3/bucket:Bucket":
            continue
        n = r["name"]
        pab = _refs(rs, "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", n)
        if not pab or not all(pab[0]["inputs"].get(k) is True for k in (
                "blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")):
            out.append(f"{n}: S3 bucket without a full public access block")
        if not _refs(rs, "aws:s3/bucketServerSideEncryptionConfiguration:"
                         "BucketServerSideEncryptionConfiguration", n):
            out.append(f"{n}: S3 bucket without default encryption")
        rules = [x for lc in _refs(rs, LIFECYCLE, n) for x in lc["inputs"].get("rules") or []]
        if not any(x.get("abortIncompleteMultipartUpload") for x in rules):
            out.append(f"{n}: S3 bucket without a lifecycle rule for torn uploads")
    return out


def bucket_keeps_checkpoints(plan: "Plan", rs: list[dict]) -> list[str]:
    return keeps_checkpoints(plan, rs, lambda r: r["type"] == LIFECYCLE and any(
        x.get("expiration") for x in r["inputs"].get("rules") or []))


def _bucket_wide(r: dict, named: set[str]) -> list[str]:
    """A bucket policy, lifecycle, encryption or public-access block is one per bucket: ours on
    the user's bucket would replace theirs, and destroy would delete it."""
    t, bucket = r["type"], str(r["inputs"].get("bucket"))
    if t.startswith("aws:s3/") and t not in BUCKET_TYPES and bucket in named:
        return [f"{r['name']}: a bucket-wide setting on s3://{bucket}, the user's bucket"]
    return []


def owned_storage(plan: "Plan", rs: list[dict]) -> list[str]:
    return owns_only(plan, rs, BUCKET_TYPES, _bucket_wide)


def bucket_scoped(plan: "Plan", rs: list[dict]) -> list[str]:
    """No `s3:*` / `*` action, no S3 action on every bucket."""
    out = []
    for r in rs:
        i, t, n = r["inputs"], r["type"], r["name"]
        if t not in ("aws:iam/rolePolicy:RolePolicy", "aws:iam/policy:Policy"):
            continue
        for st in statements(i.get("policy")):
            if st.get("Effect") != "Allow":
                continue
            acts, res = _list(st.get("Action")), _list(st.get("Resource"))
            if any(a in ("*", "s3:*") for a in acts):
                out.append(f"{n}: {'/'.join(a for a in acts if a in ('*', 's3:*'))} grants all of S3")
            s3 = [a for a in acts if a.startswith("s3:")]
            if s3 and any(x in ("*", "arn:aws:s3:::*", "arn:aws:s3:::*/*") for x in res):
                out.append(f"{n}: {', '.join(s3)} on every bucket")
    return out
