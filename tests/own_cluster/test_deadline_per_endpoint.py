"""Calls still waiting on one trickling API do not stop calls to a healthy one (issue 41
follow-up): the cap on waiting calls is per endpoint, not per process. Real sockets on
127.0.0.1, every wait bounded."""

from __future__ import annotations

import pytest

from reclaunch.errors import ProviderError
from reclaunch.runtime.deadline import MAX_STRAYS, endpoint
from reclaunch.runtime.kube import Kube
from tests.recorded_server import RecordedServer
from tests.slow_servers import TricklingServer


@pytest.mark.timeout(120)
def test_a_trickling_api_does_not_block_a_healthy_one(monkeypatch):
    monkeypatch.setenv("RECLAUNCH_SDK_READ_TIMEOUT", "60")
    monkeypatch.setenv("RECLAUNCH_SDK_CALL_TIMEOUT", "0.5")
    healthy = RecordedServer().start()
    healthy.add("GET", "/api/v1/nodes", body={"items": []})
    try:
        with TricklingServer(head=False) as slow:
            bad = Kube.from_host(slow.url, token="t")
            for _ in range(MAX_STRAYS):
                with pytest.raises(ProviderError, match="no complete answer"):
                    bad.nodes()
            monkeypatch.setenv("RECLAUNCH_SDK_CALL_TIMEOUT", "20")
            assert Kube.from_host(healthy.url, token="t").nodes() == []   # this one answers ...
            with pytest.raises(ProviderError, match="earlier calls to 127.0.0.1:.* still waiting"):
                bad.nodes()   # ... while the trickling one is capped
    finally:
        healthy.stop()


@pytest.mark.parametrize("url, key", [
    ("https://API.example.com/apis/x?y=1", "api.example.com:443"),
    ("http://127.0.0.1:8080", "127.0.0.1:8080"),
    ("http://localhost/x", "localhost:80"),
    ("https://[::1]:6443/api", "::1:6443"),
])
def test_endpoint_key(url, key):
    assert endpoint(url) == key
