"""The reference trainer's checkpoints in a bucket (s3:// through fsspec/s3fs, moto on 127.0.0.1):
written shard-first and marker-last, resumed from the newest complete one, never from a torn one."""
from __future__ import annotations

import json

import pytest

from tests.moto_s3 import s3  # noqa: F401  (fixture)
from trainer_helpers import SMALL, run_single

pytest.importorskip("s3fs", reason="s3fs is a dev dependency (pyproject dev, extra s3)")
BUCKET, PREFIX = "ckpt-bucket", "jobs/run-1"
URL = f"s3://{BUCKET}/{PREFIX}"


def _train(steps: int, *extra: str, engine: str = "torchrec"):
    return run_single("--model", "deepfm", "--engine", engine, "--steps", str(steps),
                      "--log-every", "5", *SMALL, "--checkpoint-every-steps", "5",
                      "--keep-checkpoints", "2", env={"CHECKPOINT_DIR": URL}, timeout=240)


@pytest.mark.timeout(300)
def test_sharded_checkpoint_in_bucket_keeps_k_and_resumes(s3):  # noqa: F811
    import dcp_ckpt

    s3.client.create_bucket(Bucket=BUCKET)
    first = _train(12)
    assert first.returncode == 0, first.stderr[-2000:]
    saved = dcp_ckpt.list_checkpoints(URL)
    assert [s for s, _ in saved] == [10, 12]                    # keep-last-2 pruned step 5
    for step, path in saved:
        meta = dcp_ckpt.verify(path)                            # marker lists every object it covers
        assert meta["step"] == step and any(n.endswith(".distcp") for n in meta["files"])
    keys = s3.keys(BUCKET, PREFIX)
    assert f"{PREFIX}/step-0000000012/meta.json" in keys and f"{PREFIX}/result.json" in keys
    assert not [k for k in keys if "step-0000000005" in k]
    again = _train(20)
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"resumed_from_step=12 checkpoint={URL}/step-0000000012" in again.stdout


@pytest.mark.timeout(300)
def test_torn_upload_is_never_resumed_from(s3):  # noqa: F811
    import dcp_ckpt

    s3.client.create_bucket(Bucket=BUCKET)
    assert _train(10).returncode == 0
    # A writer killed mid-save: step 15's shards are there (one of them cut short), its
    # marker never was. And step 20 has a marker whose sizes the objects do not match.
    s3.client.put_object(Bucket=BUCKET, Key=f"{PREFIX}/step-0000000015/__0_0.distcp", Body=b"x" * 10)
    marker = json.loads(s3.client.get_object(Bucket=BUCKET, Key=f"{PREFIX}/step-0000000010/meta.json")["Body"].read())
    for name in marker["files"]:
        body = s3.client.get_object(Bucket=BUCKET, Key=f"{PREFIX}/step-0000000010/{name}")["Body"].read()
        s3.client.put_object(Bucket=BUCKET, Key=f"{PREFIX}/step-0000000020/{name}", Body=body[: len(body) // 2])
    s3.client.put_object(Bucket=BUCKET, Key=f"{PREFIX}/step-0000000020/meta.json",
                         Body=json.dumps({**marker, "step": 20}).encode())
    assert [s for s, _ in dcp_ckpt.list_checkpoints(URL)] == [5, 10, 15, 20]
    resumed = _train(12)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"resumed_from_step=10 checkpoint={URL}/step-0000000010" in resumed.stdout
    assert "skipping_checkpoint" in resumed.stdout
    left = s3.keys(BUCKET, PREFIX)
    assert not [k for k in left if "step-0000000015" in k or "step-0000000020" in k]   # torn ones deleted


@pytest.mark.timeout(200)
def test_ddp_single_file_checkpoint_in_bucket(s3):  # noqa: F811
    import checkpoint

    s3.client.create_bucket(Bucket=BUCKET)
    assert _train(10, engine="ddp").returncode == 0
    assert [s for s, _ in checkpoint.list_checkpoints(URL)] == [5, 10]
    s3.client.put_object(Bucket=BUCKET, Key=f"{PREFIX}/ckpt-0000000015.pt", Body=b"RECLAUNCH-CKPT-1\n")
    again = _train(12, engine="ddp")
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"resumed_from_step=10 checkpoint={URL}/ckpt-0000000010.pt" in again.stdout
