"""Issue 41 item 5: `gc` against an endpoint that trickles one byte at a time. botocore's
read_timeout restarts with every byte, so only a total deadline per call ends it. Real sockets
on 127.0.0.1; every wait bounded."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.slow_servers import TricklingServer

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("head", [True, False], ids=["headers", "body"])
def test_gc_against_a_trickling_endpoint_ends_at_the_call_deadline(tmp_path, head):
    # Bytes every 0.2 s against a 10 s read timeout: only the 3 s call deadline can end it.
    with TricklingServer(head=head, every=0.2) as server:
        env = {**os.environ, "AWS_ENDPOINT_URL": server.url, "RECLAUNCH_HOME": str(tmp_path / "home"),
               "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "RECLAUNCH_SDK_CONNECT_TIMEOUT": "5", "RECLAUNCH_SDK_READ_TIMEOUT": "10",
               "RECLAUNCH_SDK_ATTEMPTS": "1", "RECLAUNCH_SDK_CALL_TIMEOUT": "3"}
        t0 = time.monotonic()
        try:
            proc = subprocess.run([sys.executable, "-m", "reclaunch", "gc", "--cloud", "aws",
                                   "--region", "us-east-1"], env=env, cwd=ROOT,
                                  capture_output=True, text=True, timeout=90)
        except subprocess.TimeoutExpired:
            pytest.fail("gc kept reading a trickling endpoint for 90 s")
        took = time.monotonic() - t0
    assert proc.returncode == 1, proc.stdout + proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "no complete answer within 3 s" in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert took < 40, f"gc took {took:.0f} s"   # one call's deadline, then it stops calling


def test_the_call_deadline_is_a_checked_pin(monkeypatch):
    from reclaunch.cli.envpins import problems
    from reclaunch.runtime.deadline import SDK_CALL_S, call_deadline

    assert call_deadline() == SDK_CALL_S
    monkeypatch.setenv("RECLAUNCH_SDK_CALL_TIMEOUT", "2.5")
    assert call_deadline() == 2.5 and not problems()
    monkeypatch.setenv("RECLAUNCH_SDK_CALL_TIMEOUT", "never")
    assert any("RECLAUNCH_SDK_CALL_TIMEOUT" in p for p in problems())
