"""The AWS SDK's error codes as reclaunch reads them: which are worth a retry, which mean the
resource is already gone. Shared by the sweeper and anything else that calls boto3."""

from __future__ import annotations

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
