"""Issue 15: `gc` against an endpoint that hangs, or dies in the middle of a sweep. Real
sockets on 127.0.0.1; every wait bounded by RECLAUNCH_SDK_* (seconds, not minutes)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import boto3
import pytest

from reclaunch.providers import gc
from reclaunch.runtime.sweep import SDK_ATTEMPTS, SDK_CONNECT_S, SDK_READ_S, sdk_limits

ROOT = Path(__file__).resolve().parents[2]
REGION = "us-east-1"


class HangingServer:
    """Accepts connections and never answers (a wedged load balancer)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self.stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        self.sock.settimeout(0.2)
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
                self.held.append(conn)
            except OSError:
                continue

    def close(self):
        self.stop = True
        for c in self.held:
            c.close()
        self.sock.close()


@pytest.fixture
def fast_limits(monkeypatch):
    monkeypatch.setenv("RECLAUNCH_SDK_CONNECT_TIMEOUT", "1")
    monkeypatch.setenv("RECLAUNCH_SDK_READ_TIMEOUT", "1")
    monkeypatch.setenv("RECLAUNCH_SDK_ATTEMPTS", "2")


def test_every_aws_call_has_timeouts_and_bounded_retries():
    from reclaunch.providers.aws.sweep import AwsSweeper

    assert sdk_limits() == (SDK_CONNECT_S, SDK_READ_S, SDK_ATTEMPTS)
    cfg = AwsSweeper(REGION)._client("ec2").meta.config
    assert (cfg.connect_timeout, cfg.read_timeout) == (SDK_CONNECT_S, SDK_READ_S)
    assert cfg.retries["total_max_attempts"] == SDK_ATTEMPTS and cfg.retries["mode"] == "standard"


@pytest.mark.timeout(90)
def test_gc_against_a_hung_endpoint_ends_in_seconds_with_progress(tmp_path, fast_limits):
    server = HangingServer()
    try:
        env = {**os.environ, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{server.port}",
               "RECLAUNCH_HOME": str(tmp_path / "home")}
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "reclaunch", "gc", "--cloud", "aws",
                               "--region", REGION, "--yes"], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=80)
        took = time.monotonic() - t0
    finally:
        server.close()
    assert proc.returncode == 1, proc.stderr
    assert "listing aws us-east-1" in proc.stdout                      # progress, at once
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "cannot reach AWS" in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert took < 40, f"gc took {took:.0f}s against a hung endpoint"   # was 241 s


class DyingProxy:
    """Forwards to moto until `die_after` deletes have been answered OK; from then on every
    request gets its connection closed without an answer (the endpoint died mid-sweep)."""

    DELETES = ("Action=DeleteVolume",)

    def __init__(self, upstream: str, die_after: int):
        proxy = self
        self.upstream, self.die_after, self.deletes_ok, self.dead = upstream, die_after, 0, False

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if proxy.dead:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                req = urllib.request.Request(proxy.upstream + self.path, data=body, method="POST",
                                             headers={k: v for k, v in self.headers.items()
                                                      if k.lower() != "host"})
                with urllib.request.urlopen(req, timeout=10) as resp:
                    status, headers, data = resp.status, resp.getheaders(), resp.read()
                self.send_response(status)
                for k, v in headers:
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                if status == 200 and any(d.encode() in body for d in proxy.DELETES):
                    proxy.deletes_ok += 1
                    proxy.dead = proxy.deletes_ok >= proxy.die_after

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.timeout(120)
def test_endpoint_dying_mid_sweep_counts_what_was_deleted(monkeypatch, fast_limits, no_sleep):
    from botocore.client import BaseClient
    from moto.server import ThreadedMotoServer

    real = BaseClient._make_api_call

    def no_placement_groups(self, operation, params):   # moto 5.2 lacks them
        if operation == "DescribePlacementGroups":
            return {"PlacementGroups": []}
        return real(self, operation, params)

    monkeypatch.setattr(BaseClient, "_make_api_call", no_placement_groups)
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    ec2 = boto3.client("ec2", region_name=REGION, endpoint_url=f"http://{host}:{port}")
    tags = [{"ResourceType": "volume", "Tags": [{"Key": "reclaunch-managed", "Value": "true"},
                                               {"Key": "reclaunch-cluster", "Value": "dies"}]}]
    vols = [ec2.create_volume(AvailabilityZone=f"{REGION}a", Size=10,
                              TagSpecifications=tags)["VolumeId"] for _ in range(6)]
    proxy = DyingProxy(f"http://{host}:{port}", die_after=3)
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
    try:
        t0 = time.monotonic()
        report = gc("aws", REGION, "dies", delete=True, sleep=no_sleep)
        took = time.monotonic() - t0
        left = {v["VolumeId"] for v in ec2.describe_volumes()["Volumes"]}
    finally:
        proxy.close()
        moto.stop()
    gone = set(vols) - left
    assert proxy.deletes_ok == 3 and len(gone) == 3
    # Every delete the cloud accepted is counted; none of them can be verified any more.
    assert {o.id for o in report.deleted + report.unverified} == gone
    assert report.unreachable and not report.ok and report.exit_code == 1
    assert len(report.failed) == 3 and all(o.orphan.id in left for o in report.failed)
    text = report.render()
    assert "deleted 3 (" in text and "not verified" in text and "stopped answering" in text
    assert took < 60, f"{took:.0f}s"
