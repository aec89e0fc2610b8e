"""Shared fixtures. Every test gets its own RECLAUNCH_HOME so nothing touches ~/.reclaunch."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SHARED = ROOT.parent / "shared"


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("reclaunch-home")
    monkeypatch.setenv("RECLAUNCH_HOME", str(home))
    # No test may reach a real cloud: blank credentials and endpoints point nowhere useful.
    for var in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                "GOOGLE_APPLICATION_CREDENTIALS", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET"):
        monkeypatch.delenv(var, raising=False)
    yield home


@pytest.fixture
def example_paths():
    return sorted(EXAMPLES.glob("*.yaml"))
