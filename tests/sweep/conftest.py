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
