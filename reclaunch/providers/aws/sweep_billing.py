"""The AWS sweep's kinds beyond compute that stacks/aws creates and that bill while they stand:
FSx for Lustre and EFS (stacks/aws/storage.py), the NAT gateway and its Elastic IP
(stacks/aws/network.py), the checkpoint bucket (stacks/aws/bucket.py). All carry the stack's
tags; each is listed by them, priced, re-described and deleted like the compute kinds.

Prices: file systems and buckets by the planner's own per-GB-month figures (planner.yaml
storage_usd_per_gb_month, object_storage.yaml), so the plan and gc agree. Free to keep
standing: VPC, subnets, route tables, internet gateway, S3 gateway endpoint, security groups.
"""

from __future__ import annotations

from typing import Any, Callable

from reclaunch.errors import ProviderError
from reclaunch.providers.aws.facts import FACTS
from reclaunch.providers.aws.sdk import _not_found, _tags
from reclaunch.runtime.sweep import TransientError, storage_hourly

# The plan's own figures (aws/facts.py, prices.md): EBS gp3 for every volume type, the EKS
# control plane in standard support.
EBS_USD_PER_GB_MONTH = FACTS.planner["pvc_usd_per_gb_month"]
EKS_USD_PER_HOUR = FACTS.planner["control_plane_usd_per_hour"]
# aws.amazon.com/vpc/pricing, NAT gateway, US East (N. Virginia): 0.045 USD per gateway-hour
# (plus 0.045 per GB processed, which the sweep cannot know); public IPv4 addresses, in use or
# idle, 0.005 USD per IP-hour since 2024-02-01 (aws.amazon.com/blogs/aws/new-aws-public-ipv4-
# address-charge-public-ip-insights). Both as quoted by cloudburn.io/blog/aws-nat-gateway-
# pricing (2026-02-24) and usage.ai/blogs/aws-network-costs (us-east-1, May 2026), read 2026-12.
NAT_USD_PER_HOUR = 0.045
PUBLIC_IPV4_USD_PER_HOUR = 0.005
GIB = 1024 ** 3

# Deletion rank of each kind, between the compute kinds' (aws/sweep.py RANK): file systems and
# the NAT gateway go once the instances are gone and before the groups and addresses they use.
RANK = {"fsx-filesystem": 5, "efs-filesystem": 5, "nat-gateway": 5, "elastic-ip": 9,
        "s3-bucket": 10}
DEAD_NAT = ("deleting", "deleted", "failed")


def _gb_month(kind: str) -> float:
    from reclaunch.planner.cost import storage_rate
    return storage_rate(kind, "aws")


class BillingKinds:
    """Mixed into AwsSweeper: uses its _call, _pages, _orphan and _tag_filters."""

    _call: Callable[..., dict]
    _pages: Callable[..., list]
    _orphan: Callable[..., Any]
    _tag_filters: Callable[..., list]
    region: str

    # ---- list ----------------------------------------------------------------------------
    def _fsx(self, cluster):
        out = []
        for f in self._pages("fsx", "describe_file_systems", "FileSystems"):
            if f.get("Lifecycle") == "DELETING":
                continue
            gib = f.get("StorageCapacity")   # GiB; the stack makes Lustre only
            out.append(self._orphan("fsx-filesystem", f["FileSystemId"], "", _tags(f.get("Tags")),
                                    storage_hourly(gib, _gb_month("fsx-lustre")),
                                    size_gb=gib, type=f.get("FileSystemType")))
        return out

    def _efs(self, cluster):
        from reclaunch.providers.aws.pages import pages

        out = []
        for resp in pages(lambda **k: self._call("efs", "describe_file_systems", **k), {},
                          token_in="Marker", token_out="NextMarker", what="efs.describe_file_systems"):
            for f in resp.get("FileSystems", []):
                if f.get("LifeCycleState") in ("deleting", "deleted"):
                    continue
                gib = (f.get("SizeInBytes") or {}).get("Value", 0) / GIB
                out.append(self._orphan("efs-filesystem", f["FileSystemId"], f.get("Name", ""),
                                        _tags(f.get("Tags")), storage_hourly(gib, _gb_month("efs")),
                                        size_gb=round(gib, 1)))
        return out

    def _nat_gateways(self, cluster):
        return [self._orphan("nat-gateway", n["NatGatewayId"], _tags(n.get("Tags")).get("Name", ""),
                             _tags(n.get("Tags")), NAT_USD_PER_HOUR, vpc_id=n.get("VpcId"))
                for n in self._pages("ec2", "describe_nat_gateways", "NatGateways",
                                     Filter=self._tag_filters(cluster))   # sic: Filter, not Filters
                if n.get("State") not in DEAD_NAT]

    def _elastic_ips(self, cluster):
        resp = self._call("ec2", "describe_addresses", Filters=self._tag_filters(cluster))
        return [self._orphan("elastic-ip", a["AllocationId"], a.get("PublicIp", ""),
                             _tags(a.get("Tags")), PUBLIC_IPV4_USD_PER_HOUR)
                for a in resp.get("Addresses", []) if a.get("AllocationId")]

    def _buckets(self, cluster):
        """Tagged buckets through the tagging API (one query, not a GetBucketTagging per bucket
        of the account), kept when they live in this region."""
        from reclaunch.providers.aws.pages import pages
        from reclaunch.runtime.sweep import MANAGED_TAG

        out = []
        for resp in pages(lambda **k: self._call("resourcegroupstaggingapi", "get_resources", **k),
                          {"TagFilters": [{"Key": MANAGED_TAG, "Values": ["true"]}],
                           "ResourceTypeFilters": ["s3"]},
                          token_in="PaginationToken", token_out="PaginationToken",
                          what="resourcegroupstaggingapi.get_resources"):
            for r in resp.get("ResourceTagMappingList", []):
                name = r["ResourceARN"].rpartition(":")[2]
                try:
                    where = self._call("s3", "get_bucket_location", Bucket=name).get(
                        "LocationConstraint") or "us-east-1"   # None: us-east-1 (S3's legacy)
                except ProviderError as exc:
                    if _not_found(exc):
                        continue
                    raise
                if where == self.region:
                    out.append(self._orphan("s3-bucket", name, name, _tags(r.get("Tags")), None))
        return out

    BILLING_LISTERS = ("_fsx", "_efs", "_nat_gateways", "_elastic_ips", "_buckets")

    # ---- describe: (tags, live) or None ----------------------------------------------------
    def _d_fsx(self, o):
        fs = self._call("fsx", "describe_file_systems", FileSystemIds=[o.id]).get("FileSystems", [])
        return (_tags(fs[0].get("Tags")), fs[0].get("Lifecycle") != "DELETING") if fs else None

    def _d_efs(self, o):
        fs = self._call("efs", "describe_file_systems", FileSystemId=o.id).get("FileSystems", [])
        return (_tags(fs[0].get("Tags")), fs[0].get("LifeCycleState") not in ("deleting", "deleted")
                ) if fs else None

    def _d_nat(self, o):
        ns = self._call("ec2", "describe_nat_gateways", NatGatewayIds=[o.id]).get("NatGateways", [])
        return (_tags(ns[0].get("Tags")), ns[0].get("State") not in DEAD_NAT) if ns else None

    def _d_eip(self, o):
        a = self._call("ec2", "describe_addresses", AllocationIds=[o.id]).get("Addresses", [])
        return (_tags(a[0].get("Tags")), True) if a else None

    def _d_bucket(self, o):
        try:
            tags = self._call("s3", "get_bucket_tagging", Bucket=o.id).get("TagSet", [])
        except ProviderError as exc:
            if getattr(exc, "code", "") != "NoSuchTagSet":
                raise
            tags = []
        return _tags(tags), True

    BILLING_DESCRIBE = {"fsx-filesystem": "_d_fsx", "efs-filesystem": "_d_efs",
                        "nat-gateway": "_d_nat", "elastic-ip": "_d_eip", "s3-bucket": "_d_bucket"}

    # ---- delete ------------------------------------------------------------------------------
    BILLING_DELETE: dict[str, Callable[[Any], tuple[str, str, dict]]] = {
        # FSx takes no final backup unless asked (DeleteFileSystem SkipFinalBackup defaults true).
        "fsx-filesystem": lambda o: ("fsx", "delete_file_system", {"FileSystemId": o.id}),
        "nat-gateway": lambda o: ("ec2", "delete_nat_gateway", {"NatGatewayId": o.id}),
        "elastic-ip": lambda o: ("ec2", "release_address", {"AllocationId": o.id}),
    }

    def _delete_efs(self, o) -> None:
        """Mount targets first: DeleteFileSystem refuses while any remains (FileSystemInUse,
        retried by the sweep while they go)."""
        for mt in self._call("efs", "describe_mount_targets", FileSystemId=o.id).get("MountTargets", []):
            self._call("efs", "delete_mount_target", MountTargetId=mt["MountTargetId"])
        self._call("efs", "delete_file_system", FileSystemId=o.id)

    def _delete_bucket(self, o) -> None:
        """Empty it (the stack made it with force_destroy: `down` would do the same), then delete
        it. Versions or uploads left are the bucket's failure, named, never retried blindly."""
        from reclaunch.providers.aws.pages import pages

        for resp in pages(lambda **k: self._call("s3", "list_objects_v2", **k), {"Bucket": o.id},
                          token_in="ContinuationToken", token_out="NextContinuationToken",
                          what=f"s3.list_objects_v2 {o.id}"):
            keys = [{"Key": c["Key"]} for c in resp.get("Contents", [])]
            if keys:   # at most 1000 a page, as DeleteObjects takes
                self._call("s3", "delete_objects", Bucket=o.id,
                           Delete={"Objects": keys, "Quiet": True})
        try:
            self._call("s3", "delete_bucket", Bucket=o.id)
        except TransientError:
            raise
        except ProviderError as exc:
            if getattr(exc, "code", "") == "BucketNotEmpty":
                raise ProviderError(f"s3://{o.id} still holds object versions or uploads after "
                                    "its objects were deleted", hint=f"empty s3://{o.id} yourself "
                                    "(`aws s3 rb --force` keeps no versions), then rerun gc") from None
            raise

    BILLING_DELETE_FN = {"efs-filesystem": "_delete_efs", "s3-bucket": "_delete_bucket"}
