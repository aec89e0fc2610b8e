"""Shared fixtures for the orphan-sweep tests: no credentials, no network but 127.0.0.1."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# tests/recorded_server.py is shared test infrastructure; make it importable from here.
_TESTS = str(Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)


@pytest.fixture(autouse=True)
def _fake_aws_env(monkeypatch, tmp_path):
    # Fake credentials only; make sure nothing from the developer's machine leaks in.
    for var in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_CONFIG_FILE",
                "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-creds"))


@pytest.fixture
def no_sleep():
    calls: list[float] = []
    calls_append = calls.append

    def sleep(seconds: float) -> None:
        calls_append(seconds)

    sleep.calls = calls  # type: ignore[attr-defined]
    return sleep


@pytest.fixture
def fake_placement_groups(monkeypatch):
    """moto 5.2 does not implement EC2 placement groups; emulate the three calls we use
    client-side (so it works for in-process moto and the moto server alike)."""
    from botocore.client import BaseClient

    groups: dict[str, dict] = {}
    real = BaseClient._make_api_call

    def _match(g, filters):
        tags = {t["Key"]: t["Value"] for t in g["Tags"]}
        for f in filters or []:
            key = f["Name"].removeprefix("tag:")
            if f["Name"].startswith("tag:") and tags.get(key) not in f["Values"]:
                return False
        return True

    def fake(self, operation, params):
        if operation == "CreatePlacementGroup":
            tags = [t for s in params.get("TagSpecifications", []) for t in s["Tags"]]
            groups[params["GroupName"]] = {
                "GroupName": params["GroupName"], "GroupId": f"pg-{len(groups):08x}",
                "Strategy": params.get("Strategy"), "State": "available", "Tags": tags}
            return {}
        if operation == "DescribePlacementGroups":
            names = params.get("GroupNames")
            missing = [n for n in names or [] if n not in groups]
            if missing:
                from botocore.exceptions import ClientError
                raise ClientError({"Error": {"Code": "InvalidPlacementGroup.Unknown",
                                             "Message": f"{missing[0]} unknown"}}, operation)
            return {"PlacementGroups": [dict(g) for g in groups.values()
                                        if (not names or g["GroupName"] in names)
                                        and _match(g, params.get("Filters"))]}
        if operation == "DeletePlacementGroup":
            groups.pop(params["GroupName"], None)
            return {}
        return real(self, operation, params)

    monkeypatch.setattr(BaseClient, "_make_api_call", fake)
    return groups
