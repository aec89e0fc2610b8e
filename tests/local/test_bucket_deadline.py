"""Issue 41: S3 calls of `up` (bucket creation, the stack's ownership read) and `down` (the
prefix's deletion) end at the call deadline against an endpoint that trickles one byte at a
time (botocore's read timeout restarts with each byte). Real sockets on 127.0.0.1."""

from __future__ import annotations

import time

import pytest

from reclaunch.errors import ProviderError
from tests.slow_servers import TricklingServer


@pytest.fixture
def trickle(monkeypatch):
    # Header bytes every 0.2 s against a 10 s read timeout: only the 2 s call deadline can end a call.
    with TricklingServer(head=True, every=0.2) as server:
        for k, v in {"AWS_ENDPOINT_URL": server.url, "AWS_ACCESS_KEY_ID": "testing",
                     "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                     "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
                     "RECLAUNCH_SDK_READ_TIMEOUT": "10", "RECLAUNCH_SDK_ATTEMPTS": "1",
                     "RECLAUNCH_SDK_CALL_TIMEOUT": "2"}.items():
            monkeypatch.setenv(k, v)
        yield server


def _ends(fn) -> str:
    t0 = time.monotonic()
    with pytest.raises(ProviderError) as err:
        fn()
    assert time.monotonic() - t0 < 20
    assert "no complete answer within 2 s" in err.value.message
    return err.value.message


@pytest.mark.timeout(90)
def test_local_bucket_up_and_down_end_at_the_deadline(trickle, tmp_path):
    from reclaunch.providers.local import bucket

    info = {"bucket": "acme-ckpt", "prefix": "run-1", "create": True}
    assert "s3://acme-ckpt" in _ends(lambda: bucket.ensure("c1", info, tmp_path))
    store = {**info, "endpoint": trickle.url}
    assert "s3://acme-ckpt" in _ends(lambda: bucket.delete(store, tmp_path))


@pytest.mark.timeout(90)
def test_the_stacks_bucket_read_ends_at_the_deadline(trickle):
    from reclaunch.providers.aws.buckets import foreign
    from tests.stacks.test_stacks_bucket import bucket_plan

    assert "s3://acme-ckpt" in _ends(lambda: foreign(bucket_plan("aws")))
