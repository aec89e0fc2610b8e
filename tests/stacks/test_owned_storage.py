"""Whatever `up` did not create, `down` never deletes (issue 41 §1, the stacks' bucket side):
the S3 bucket the stack would create is read first (moto on 127.0.0.1), and the previews
never create, import or rewrite a bucket the user named."""

from __future__ import annotations

import copy
import json

import pytest

from reclaunch.tags import CLUSTER_TAG
from stacks.policy import check
from tests.moto_s3 import s3  # noqa: F401 (fixture)

from .test_stacks_bucket import bucket_plan, previews  # noqa: F401 (fixture)


def _bucket(s3, name, tags=None, objects=("datasets/a.parquet", "models/b.pt")):
    s3.client.create_bucket(Bucket=name)
    for key in objects:
        s3.client.put_object(Bucket=name, Key=key, Body=b"theirs")
    if tags:
        s3.client.put_bucket_tagging(Bucket=name, Tagging={"TagSet": [
            {"Key": k, "Value": v} for k, v in tags.items()]})


def test_an_s3_bucket_the_stack_would_create_must_not_belong_to_anyone_else(s3):  # noqa: F811
    from reclaunch.providers.aws.buckets import foreign

    plan = bucket_plan("aws")                         # storage.kind: bucket, s3://acme-ckpt/run-1
    assert foreign(plan, s3.client) == []             # absent: the stack creates it
    _bucket(s3, "acme-ckpt")                          # the user's, with their objects
    (line,) = foreign(plan, s3.client)
    assert "s3://acme-ckpt already exists, made by no reclaunch cluster" in line
    s3.client.put_bucket_tagging(Bucket="acme-ckpt", Tagging={"TagSet": [
        {"Key": CLUSTER_TAG, "Value": "someone-else"}]})
    assert "made by cluster 'someone-else'" in foreign(plan, s3.client)[0]
    s3.client.put_bucket_tagging(Bucket="acme-ckpt", Tagging={"TagSet": [
        {"Key": CLUSTER_TAG, "Value": plan.name}]})
    # A teammate's cluster of the same name tagged it: the tag alone proves nothing.
    (line,) = foreign(plan, s3.client, held=lambda b: False)
    assert f"s3://acme-ckpt already exists, tagged for a cluster named {plan.name!r}, but this " \
           "cluster's stack state does not hold it" in line
    assert foreign(plan, s3.client) != []             # nothing to ask: not proven either
    held = []
    assert foreign(plan, s3.client, held=lambda b: held.append(b) or True) == []   # a re-run
    assert held == ["acme-ckpt"]                      # ours: this stack's state holds it
    assert s3.keys("acme-ckpt") == ["datasets/a.parquet", "models/b.pt"]   # never touched
    assert foreign(bucket_plan("aws", kind="none"), s3.client) == []   # the user's own: no bucket made


# A container of the user's names its account (the stack makes none to hold it), and
# storage.existing the account's resource id (the scope of the job's role assignment).
OWN = {"aws": None, "gcp": None, "azure": "abfs://ckpt@acmeckpt.dfs.core.windows.net/run-1"}
ACCOUNT_ID = ("/subscriptions/0000/resourceGroups/acme/providers/Microsoft.Storage/"
              "storageAccounts/acmeckpt")


@pytest.mark.parametrize("cloud", sorted(OWN))
def test_a_named_bucket_gets_no_bucket_resource_and_nothing_is_imported(previews, cloud):
    plan, res = previews(cloud, kind="none", url=OWN[cloud],
                         existing=ACCOUNT_ID if cloud == "azure" else None)
    assert not [r for r in res if r["type"].endswith((":Bucket", ":BucketV2", ":StorageAccount"))
                and "ckpt" in r["name"]]
    assert not [r for r in res if r["import_id"]]
    assert check(plan, res) == []


def test_owned_storage_catches_what_would_delete_or_rewrite_the_users_bucket(previews):
    plan, res = previews("aws", kind="none")          # s3://acme-ckpt is the user's
    planted = copy.deepcopy(res)
    planted.append({**planted[0], "type": "aws:s3/bucketPolicy:BucketPolicy", "name": "x-policy",
                    "inputs": {"bucket": "acme-ckpt", "policy": json.dumps({"Statement": []})},
                    "import_id": None, "retain_on_delete": False, "engine": []})
    planted.append({**planted[0], "type": "aws:s3/bucket:Bucket", "name": "x-adopt",
                    "inputs": {"bucket": "acme-ckpt"}, "import_id": "acme-ckpt",
                    "retain_on_delete": False, "engine": [], "tags": {}, "taggable": None})
    found = [f for f in check(plan, planted) if f.startswith("owned-storage:")]
    assert any("bucket-wide setting on s3://acme-ckpt" in f for f in found)
    assert any("x-adopt: imported (acme-ckpt) and not retained" in f for f in found)
    assert any("x-adopt: a bucket resource for acme-ckpt" in f for f in found)
    gplan, gres = previews("gcp", kind="none")
    member = next(r for r in gres if r["type"] == "gcp:storage/bucketIAMMember:BucketIAMMember")
    binding = {**member, "type": "gcp:storage/bucketIAMBinding:BucketIAMBinding"}
    assert any("BucketIAMBinding replaces the bucket's other grants" in f
               for f in check(gplan, [*gres, binding]))


def test_up_refuses_a_bucket_it_would_take_over_before_anything_exists(s3):  # noqa: F811
    """`up` of storage.kind: bucket naming a bucket the user already has, in us-east-1 where S3
    would answer the create with 200: exit 2 before the engine runs; the objects stay."""
    from reclaunch.errors import UsageError
    from reclaunch.providers.aws import provider as aws
    from reclaunch.runtime.infra import Infra

    class NoEngine(Infra):
        ran: list = []

        def check(self):
            pass

        def up(self, plan, on_event=None):   # pragma: no cover - must never be reached
            self.ran.append(plan.name)
            return {}

    _bucket(s3, "acme-ckpt")
    plan = bucket_plan("aws")
    assert plan.region == "us-east-1"
    engine = NoEngine()
    with pytest.raises(UsageError, match="refusing to start: s3://acme-ckpt already exists, "
                       "made by no reclaunch cluster") as exc:
        aws.provider(infra=engine).up(plan)
    assert "storage.kind: none" in exc.value.hint and not engine.ran
    assert s3.keys("acme-ckpt") == ["datasets/a.parquet", "models/b.pt"]
