"""The AWS SDK's error codes as reclaunch reads them: which are worth a retry, which mean the
resource is already gone. Shared by the sweeper and anything else that calls boto3."""

from __future__ import annotations

from typing import Any

from reclaunch.runtime.sweep import TransientError

# Worth retrying: throttling, and dependencies that are still going away.
TRANSIENT_CODES = {
    "Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException",
    "DependencyViolation", "IncorrectState", "IncorrectInstanceState", "VolumeInUse",
    "InvalidPlacementGroup.InUse", "ResourceInUse", "ResourceInUseException",
    "ScalingActivityInProgress", "InternalError", "InternalFailure", "ServiceUnavailable",
    "Unavailable", "InvalidNetworkInterface.InUse",
    # EFS while its mount targets go; an Elastic IP while the NAT gateway holding it goes.
    "FileSystemInUse", "InvalidIPAddress.InUse",
}
NOT_FOUND_SUFFIXES = (".NotFound", "NotFoundException", ".Malformed",
                      "InvalidPlacementGroup.Unknown")
NOT_FOUND_CODES = {"ResourceNotFoundException", "InvalidGroup.NotFound", "FileSystemNotFound",
                   "NatGatewayNotFound", "NoSuchBucket", "MountTargetNotFound"}

LIVE_INSTANCE_STATES = ["pending", "running", "stopping", "stopped"]
LIVE_FLEET_STATES = {"submitted", "active", "modifying"}


def _tags(items: list[dict] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in items or [] if "Key" in t}


def _not_found(exc: Exception) -> bool:
    code, msg = getattr(exc, "code", ""), str(exc).lower()
    if isinstance(exc, TransientError) or not code:
        return False
    # Auto Scaling says "ValidationError: ... not found" for a missing group.
    return (code in NOT_FOUND_CODES or code.endswith(NOT_FOUND_SUFFIXES)
            or (code == "ValidationError" and "not found" in msg))


class Bounded:
    """A boto3 client whose every call runs inside the total call deadline (runtime/deadline.py):
    botocore's read timeout restarts with each byte, so a trickling endpoint would hang it."""

    def __init__(self, client: Any, service: str):
        self._client, self._service, self.meta = client, service, client.meta

    def __getattr__(self, op: str) -> Any:
        from reclaunch.runtime.deadline import endpoint, within

        fn = getattr(self._client, op)
        if not callable(fn):
            return fn

        def call(**kw: Any) -> Any:
            where = f" s3://{kw['Bucket']}" if "Bucket" in kw else ""
            return within(lambda: fn(**kw), f"{self._service} {op}{where}",
                          key=endpoint(self.meta.endpoint_url))
        return call


def client(service: str, region: str | None = None) -> Bounded:
    """boto3's client with the project's connect/read timeouts and bounded retries
    (sdk_limits), each call bounded in all (Bounded). The endpoint is boto3's own choice
    (AWS_ENDPOINT_URL honoured)."""
    import boto3
    from botocore.config import Config

    from reclaunch.runtime.deadline import sdk_limits

    connect, read, attempts = sdk_limits()
    cfg = Config(retries={"total_max_attempts": attempts, "mode": "standard"},
                 connect_timeout=connect, read_timeout=read)
    return Bounded(boto3.client(service, region_name=region, config=cfg), service)
