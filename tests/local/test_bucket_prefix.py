"""Issue 41: with your own bucket (storage.kind: none) `down` deletes the job's prefix, so `up`
refuses a prefix that already holds objects it did not write (moto on 127.0.0.1)."""

from __future__ import annotations

import pytest

from reclaunch.errors import ProviderError
from tests.moto_s3 import s3  # noqa: F401  (fixture)

BUCKET = "team-data"


def test_up_refuses_a_prefix_holding_objects_it_did_not_write(s3, tmp_path):  # noqa: F811
    from reclaunch.providers.local import bucket

    s3.client.create_bucket(Bucket=BUCKET)
    s3.client.put_object(Bucket=BUCKET, Key="shared/ckpt/theirs.pt", Body=b"theirs")
    info = {"bucket": BUCKET, "prefix": "shared/ckpt", "create": False}
    with pytest.raises(ProviderError) as err:
        bucket.ensure("c1", dict(info), tmp_path)
    assert "s3://team-data/shared/ckpt/ holds 1 object(s) that `up` did not write" in err.value.message
    assert "another (empty) prefix" in err.value.hint
    assert s3.keys(BUCKET) == ["shared/ckpt/theirs.pt"]


def test_an_empty_prefix_is_taken_and_a_rerun_of_up_finds_it_its_own(s3, tmp_path):  # noqa: F811
    from reclaunch.providers.local import bucket

    s3.client.create_bucket(Bucket=BUCKET)
    s3.client.put_object(Bucket=BUCKET, Key="other/x.bin", Body=b"1")
    info = {"bucket": BUCKET, "prefix": "run-1/ckpt", "create": False}
    bucket.ensure("c1", dict(info), tmp_path)
    s3.client.put_object(Bucket=BUCKET, Key="run-1/ckpt/step-10/meta.json", Body=b"{}")  # the job's
    bucket.ensure("c1", dict(info), tmp_path)          # a re-run: the prefix is this cluster's
    store = {**info, "endpoint": s3.endpoint}
    assert "deleted 1 objects" in bucket.delete(store, tmp_path)
    assert s3.keys(BUCKET) == ["other/x.bin"]
