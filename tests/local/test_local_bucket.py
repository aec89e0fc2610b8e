"""cloud: local with checkpoints in S3 (a moto server on 127.0.0.1): train, reclaim a node,
resume from the bucket; `down` deletes the bucket it created, or keeps it with --keep-storage."""

from __future__ import annotations

import sys

import pytest
import yaml

from reclaunch.errors import ProviderError
from reclaunch.providers.local import proc as lp
from reclaunch.providers.options import UpOptions
from reclaunch.spec import parse_spec
from reclaunch.tags import CLUSTER_TAG, MANAGED_TAG

from tests.local.waiting import wait_for  # noqa: E402
from tests.moto_s3 import s3  # noqa: F401  (fixture)

pytest.importorskip("s3fs", reason="s3fs is a dev dependency (pyproject dev, extra s3)")
BUCKET = "drill-ckpt"


def bucket_spec(helpers, name: str, *, kind: str = "bucket", steps: int = 240, every: float = 0.1):
    base = helpers.make_spec(name, args=["--model", "deepfm", "--steps", str(steps), "--log-every", "10"],
                             every_minutes=every)
    doc = base.model_dump(mode="json", exclude_none=True)
    doc["storage"] = {"kind": kind}
    doc["job"]["checkpoint"]["path"] = f"s3://{BUCKET}/{name}/ckpt"
    return parse_spec(yaml.safe_dump(doc), f"{name}.yaml")


@pytest.mark.timeout(300)
def test_reclaim_resumes_from_the_bucket_and_down_deletes_it(home, provider, helpers, s3):  # noqa: F811
    sys.path.insert(0, str(helpers.REPO / "examples" / "trainer"))
    import dcp_ckpt

    spec = bucket_spec(helpers, "s3drill")
    provider.up(helpers.local_plan(spec), UpOptions(detach=True), cwd=str(helpers.REPO))
    tags = {t["Key"]: t["Value"] for t in s3.client.get_bucket_tagging(Bucket=BUCKET)["TagSet"]}
    assert tags == {CLUSTER_TAG: "s3drill", MANAGED_TAG: "true"}
    wait_for(lambda: (provider.status("s3drill").details["progress"].get("step") or 0) >= 40, 150, "step 40")
    rec = provider.preempt("s3drill", 1, notice=10, replace_after=2)
    assert rec["status"] in ("killed", "replaced")
    st = wait_for(lambda: (s := provider.status("s3drill")).state in lp.TERMINAL and s, 240, "the job to end")
    assert st.state == "Succeeded", st.message
    prog = st.details["progress"]
    assert prog["done"]["step"] == 240 and prog["resumed_from"], prog
    assert prog["resumed_from"][0] >= rec["step_at_notice"]     # the SIGTERM checkpoint, from S3
    url = f"s3://{BUCKET}/s3drill/ckpt"
    saved = dcp_ckpt.list_checkpoints(url)
    assert saved and saved[-1][0] == 240 and len(saved) <= 3     # keep-last-K in the bucket
    for step, path in saved:
        assert dcp_ckpt.verify(path)["step"] == step             # every one has its marker
    assert not list((home / "local" / "s3drill").glob("ckpt*"))  # nothing checkpointed on disk
    provider.down("s3drill", yes=True)
    assert BUCKET not in [b["Name"] for b in s3.client.list_buckets()["Buckets"]]


@pytest.mark.timeout(200)
def test_down_keep_storage_keeps_the_bucket_and_a_named_bucket_loses_only_its_prefix(
        home, provider, helpers, s3):  # noqa: F811
    spec = bucket_spec(helpers, "s3keep", steps=20, every=0.01)
    provider.up(helpers.local_plan(spec), UpOptions(detach=True), cwd=str(helpers.REPO))
    wait_for(lambda: provider.status("s3keep").state in lp.TERMINAL or None, 150, "the job to end")
    provider.down("s3keep", yes=True, keep_storage=True)
    assert [k for k in s3.keys(BUCKET, "s3keep/ckpt/") if k.endswith("meta.json")]
    # A bucket the user named (storage.kind none): down deletes the job's prefix, not the bucket.
    s3.client.put_object(Bucket=BUCKET, Key="someone-else/data.bin", Body=b"1")
    named = bucket_spec(helpers, "s3named", kind="none", steps=20, every=0.01)
    provider.up(helpers.local_plan(named), UpOptions(detach=True), cwd=str(helpers.REPO))
    wait_for(lambda: provider.status("s3named").state in lp.TERMINAL or None, 150, "the job to end")
    assert s3.keys(BUCKET, "s3named/ckpt/")
    provider.down("s3named", yes=True)
    assert s3.keys(BUCKET, "s3named/") == [] and s3.keys(BUCKET, "someone-else/")
    assert s3.keys(BUCKET, "s3keep/ckpt/")


def test_a_named_bucket_that_does_not_exist_stops_up(home, provider, helpers, s3):  # noqa: F811
    with pytest.raises(ProviderError, match=f"s3://{BUCKET}"):
        provider.up(helpers.local_plan(bucket_spec(helpers, "s3none", kind="none")), UpOptions(detach=True),
                    cwd=str(helpers.REPO))
