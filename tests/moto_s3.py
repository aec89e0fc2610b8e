"""A moto S3 server on 127.0.0.1 (an ephemeral port) that boto3 and s3fs reach through
AWS_ENDPOINT_URL alone: the same variable a MinIO endpoint or a real region would use."""

from __future__ import annotations

import socket
from types import SimpleNamespace

import pytest


@pytest.fixture
def s3(monkeypatch):
    pytest.importorskip("moto.server", reason="moto[server] is a dev dependency")
    from moto.server import ThreadedMotoServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    import urllib.request

    # moto's backends are process-wide: start each test from an empty account.
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"), timeout=10)
    # moto accepts any key; these never leave this machine. No profile or config file is read.
    for k, v in {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing",
                 "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                 "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    import boto3
    try:   # fsspec caches filesystems by their arguments, not by AWS_ENDPOINT_URL: forget the last test's
        import s3fs
        s3fs.S3FileSystem.clear_instance_cache()
    except ImportError:
        pass

    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    try:
        yield SimpleNamespace(endpoint=endpoint, client=client, keys=lambda b, p="": sorted(
            o["Key"] for page in client.get_paginator("list_objects_v2").paginate(Bucket=b, Prefix=p)
            for o in page.get("Contents", [])))
    finally:
        server.stop()
