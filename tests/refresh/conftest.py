"""A tiny recorded-response HTTP server on 127.0.0.1 for the Azure and GCP price APIs.

Requests map to a key ("azure/<sku>.<region>.skip<N>" or "gcp/skus.<pageToken|first>") whose
recorded answer is tests/fixtures/recorded/pricing/<key>.json. A test can queue scripted
answers for a key first (an HTTP 429, a malformed page); they are served once each, in order.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parents[1] / "fixtures" / "recorded" / "pricing"


def request_key(path: str, query: dict[str, list[str]]) -> str:
    if path.startswith("/api/retail/prices"):
        flt = query.get("$filter", [""])[0]
        sku = re.search(r"armSkuName eq '([^']+)'", flt)
        region = re.search(r"armRegionName eq '([^']+)'", flt)
        skip = query.get("$skip", ["0"])[0]
        return f"azure/{sku and sku.group(1)}.{region and region.group(1)}.skip{skip}"
    if path.endswith("/services/6F81-5844-456A/skus"):
        return f"gcp/skus.{query.get('pageToken', ['first'])[0] or 'first'}"
    return f"unknown{path}"


class Recorded:
    def __init__(self):
        self.script: dict[str, list[tuple[int, dict, bytes]]] = {}
        self.requests: list[str] = []
        self.base = ""

    def queue(self, key: str, status: int, body: bytes | str | dict = b"",
              headers: dict | None = None) -> None:
        if isinstance(body, dict):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
        self.script.setdefault(key, []).append((status, headers or {}, body))

    def answer(self, key: str) -> tuple[int, dict, bytes]:
        if self.script.get(key):
            return self.script[key].pop(0)
        path = FIXTURES / f"{key}.json"
        if not path.is_file():
            return 404, {}, b'{"error": "no recording"}'
        return 200, {}, path.read_text().replace("{base}", self.base).encode()


@pytest.fixture
def recorded():
    rec = Recorded()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            url = urllib.parse.urlsplit(self.path)
            key = request_key(url.path, urllib.parse.parse_qs(url.query))
            rec.requests.append(key)
            status, headers, body = rec.answer(key)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    rec.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield rec
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def home(tmp_path, monkeypatch):
    """RECLAUNCH_HOME in tmp_path, so no test reads or writes the real ~/.reclaunch."""
    monkeypatch.setenv("RECLAUNCH_HOME", str(tmp_path / "home"))
    for var in ("RECLAUNCH_AZURE_PRICES_URL", "RECLAUNCH_GCP_BILLING_URL"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "home"


@pytest.fixture
def aws_env(monkeypatch):
    """Fake credentials and no endpoint override: moto / Stubber answer, never AWS."""
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                 "AWS_SESSION_TOKEN": "testing", "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(k, v)
    for k in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(k, raising=False)
