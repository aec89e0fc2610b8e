"""Issue 41 item 1: a bucket `up` did not create is never taken over, retagged or deleted.

Against a moto S3 server on 127.0.0.1 holding a bucket the user already owns, with other
objects in it (another team's data): no verb of reclaunch modifies or deletes any of it.
"""

from __future__ import annotations

import pytest
import yaml

from reclaunch.errors import ProviderError
from reclaunch.providers.local import bucket, teardown
from reclaunch.providers.local import proc as lp
from reclaunch.providers.options import UpOptions
from reclaunch.spec import parse_spec
from reclaunch.tags import CLUSTER_TAG, MANAGED_TAG

from tests.moto_s3 import s3  # noqa: F401  (fixture)

PRECIOUS = "precious"
THEIRS = ["datasets/criteo/part-0.parquet", "models/ranker/v7.pt", "README"]


def _spec(helpers, name: str, bucket_name: str, kind: str):
    doc = helpers.make_spec(name).model_dump(mode="json", exclude_none=True)
    doc["storage"] = {"kind": kind}
    doc["job"]["checkpoint"]["path"] = f"s3://{bucket_name}/{name}/ckpt"
    return parse_spec(yaml.safe_dump(doc), f"{name}.yaml")


def _precious(s3):  # noqa: F811
    s3.client.create_bucket(Bucket=PRECIOUS)
    s3.client.put_bucket_tagging(Bucket=PRECIOUS, Tagging={"TagSet": [{"Key": "team", "Value": "ads"}]})
    for k in THEIRS:
        s3.client.put_object(Bucket=PRECIOUS, Key=k, Body=b"theirs")


def _tags(s3, name: str) -> dict:  # noqa: F811
    return {t["Key"]: t["Value"] for t in s3.client.get_bucket_tagging(Bucket=name)["TagSet"]}


def _untouched(s3):  # noqa: F811
    assert s3.keys(PRECIOUS) == sorted(THEIRS)
    assert _tags(s3, PRECIOUS) == {"team": "ads"}


def test_up_refuses_a_bucket_it_did_not_create_and_down_leaves_it(home, provider, helpers, s3):  # noqa: F811
    _precious(s3)
    spec = _spec(helpers, "grab", PRECIOUS, "bucket")
    with pytest.raises(ProviderError, match=f"s3://{PRECIOUS} already exists and `up` did not create"):
        provider.up(helpers.local_plan(spec), UpOptions(detach=True), cwd=str(helpers.REPO))
    _untouched(s3)
    # A launch.json that claims the bucket (hand-made, or from an older reclaunch): down still
    # deletes only the job's prefix, never the bucket nor anything else in it.
    root = lp.cluster_dir("grab")
    lp.write_json(root / "launch.json", {"bucket": {"bucket": PRECIOUS, "prefix": "grab/ckpt",
                                                    "created": True, "create": True}})
    s3.client.put_object(Bucket=PRECIOUS, Key="grab/ckpt/step-1/meta.json", Body=b"{}")
    teardown.down(root, "grab", yes=True, grace=1.0)
    _untouched(s3)


def test_bucket_created_by_up_is_recorded_tagged_by_merge_and_deleted_only_when_empty(
        home, s3, capsys):  # noqa: F811
    root = lp.cluster_dir("maker")
    info = {"bucket": "fresh-ckpt", "prefix": "maker/ckpt", "create": True}
    note = bucket.ensure("maker", info, root)
    assert "created bucket s3://fresh-ckpt" in note
    rec = bucket.created_by(root)
    assert rec["bucket"] == "fresh-ckpt" and rec["cluster"] == "maker" and rec["endpoint"] == s3.endpoint
    assert _tags(s3, "fresh-ckpt") == {CLUSTER_TAG: "maker", MANAGED_TAG: "true"}
    # Someone adds a tag; a second `up` (after --keep-storage) keeps it.
    s3.client.put_bucket_tagging(Bucket="fresh-ckpt", Tagging={"TagSet": [
        {"Key": "cost-center", "Value": "42"}, {"Key": CLUSTER_TAG, "Value": "maker"}]})
    assert "reusing bucket" in bucket.ensure("maker", dict(info), root)
    assert _tags(s3, "fresh-ckpt") == {"cost-center": "42", CLUSTER_TAG: "maker", MANAGED_TAG: "true"}
    # Another cluster names the same bucket as its own (kind none) and writes its checkpoints.
    other = {"bucket": "fresh-ckpt", "prefix": "other/ckpt", "create": False}
    assert "using your bucket" in bucket.ensure("other", other, lp.cluster_dir("other"))
    s3.client.put_object(Bucket="fresh-ckpt", Key="maker/ckpt/step-2/meta.json", Body=b"{}")
    s3.client.put_object(Bucket="fresh-ckpt", Key="other/ckpt/step-9/meta.json", Body=b"{}")
    lp.write_json(root / "launch.json", {"bucket": {**info, "endpoint": s3.endpoint}})
    teardown.down(root, "maker", yes=True, grace=1.0)
    out = capsys.readouterr().out
    assert "deleted 1 objects under s3://fresh-ckpt/maker/ckpt/" in out and "kept bucket" in out
    assert s3.keys("fresh-ckpt") == ["other/ckpt/step-9/meta.json"]   # the other cluster's, intact
    # Once only its own prefix is left, the bucket `up` created goes with it.
    root.mkdir(parents=True)
    lp.write_json(root / "bucket.json", rec)
    s3.client.delete_object(Bucket="fresh-ckpt", Key="other/ckpt/step-9/meta.json")
    s3.client.put_object(Bucket="fresh-ckpt", Key="maker/ckpt/step-3/meta.json", Body=b"{}")
    assert "and the bucket s3://fresh-ckpt" in bucket.delete({**info, "endpoint": s3.endpoint}, root)
    assert "fresh-ckpt" not in [b["Name"] for b in s3.client.list_buckets()["Buckets"]]
    assert bucket.created_by(root) is None


def test_a_record_of_another_bucket_or_endpoint_deletes_nothing(home, s3):  # noqa: F811
    _precious(s3)
    root = lp.cluster_dir("mover")
    bucket.ensure("mover", {"bucket": "mine-ckpt", "prefix": "mover/ckpt", "create": True}, root)
    # The spec now names the user's bucket: refused before anything changes.
    with pytest.raises(ProviderError, match="created the bucket s3://mine-ckpt"):
        bucket.ensure("mover", {"bucket": PRECIOUS, "prefix": "mover/ckpt", "create": True}, root)
    _untouched(s3)
    # A store used at another endpoint: nothing deleted at this one.
    s3.client.put_object(Bucket=PRECIOUS, Key="mover/ckpt/x", Body=b"1")
    with pytest.raises(ProviderError, match="nothing deleted"):
        bucket.delete({"bucket": PRECIOUS, "prefix": "mover/ckpt", "endpoint": "http://127.0.0.1:9"}, root)
    assert "mover/ckpt/x" in s3.keys(PRECIOUS)


def test_down_confirmation_names_the_bucket(home, s3, monkeypatch):  # noqa: F811
    root = lp.cluster_dir("asked")
    bucket.ensure("asked", {"bucket": "asked-ckpt", "prefix": "asked/ckpt", "create": True}, root)
    lp.write_json(root / "launch.json", {"bucket": {"bucket": "asked-ckpt", "prefix": "asked/ckpt"}})
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    from reclaunch.errors import UsageError
    with pytest.raises(UsageError) as err:
        teardown.confirm("asked", root, yes=False, keep_storage=False)
    assert "s3://asked-ckpt/asked/ckpt/" in err.value.message
    assert "the bucket s3://asked-ckpt (created by `up`)" in err.value.message
