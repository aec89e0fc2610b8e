"""The reference trainer's checkpoints in a bucket (s3:// through fsspec/s3fs, moto on 127.0.0.1):
written shard-first and marker-last, resumed from the newest complete one, never from a torn one."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest

from tests.moto_s3 import s3  # noqa: F401  (fixture)
from trainer_helpers import SMALL, TRAIN_PY, clean_env, run_single

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


def _forge(s3, step: int, name_end: str) -> str:
    """Rewrite one object of a committed step with garbage of the same size (a forged or
    damaged shard that the sizes in meta.json cannot tell apart)."""
    key = next(k for k in s3.keys(BUCKET, f"{PREFIX}/step-{step:010d}") if k.endswith(name_end))
    size = len(s3.client.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    s3.client.put_object(Bucket=BUCKET, Key=key, Body=b"\x80" * size)
    return key


@pytest.mark.timeout(300)
def test_a_forged_object_with_matching_sizes_falls_back_to_the_previous_step(s3):  # noqa: F811
    """Issue 41 item 11: meta.json records the store's digest of every object; a step whose
    objects no longer match it is never resumed from, and the job says so and goes on."""
    import dcp_ckpt

    s3.client.create_bucket(Bucket=BUCKET)
    assert _train(10).returncode == 0
    assert [s for s, _ in dcp_ckpt.list_checkpoints(URL)] == [5, 10]
    marker = json.loads(s3.client.get_object(Bucket=BUCKET, Key=f"{PREFIX}/step-0000000010/meta.json")["Body"].read())
    _forge(s3, 10, ".metadata")
    resumed = _train(12)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert f"resumed_from_step=5 checkpoint={URL}/step-0000000005" in resumed.stdout
    assert "skipping_checkpoint=" in resumed.stdout and "differs from the digest" in resumed.stdout
    assert all(e["digest"].startswith("ETag:") for e in marker["files"].values()), marker["files"]


@pytest.mark.timeout(300)
def test_a_checkpoint_that_verifies_but_does_not_load_falls_back(s3):  # noqa: F811
    """Forged digests too (meta.json rewritten to match): DCP's load fails, and the trainer
    takes the previous step instead of dying ("invalid load key"), saying which and why."""
    import dcp_ckpt
    import fsspec

    s3.client.create_bucket(Bucket=BUCKET)
    assert _train(10).returncode == 0
    _forge(s3, 10, ".metadata")
    fs = fsspec.filesystem("s3")
    fs.invalidate_cache()
    mkey = f"{PREFIX}/step-0000000010/meta.json"
    marker = json.loads(s3.client.get_object(Bucket=BUCKET, Key=mkey)["Body"].read())
    import store
    marker["files"] = store.objects(fs, f"{BUCKET}/{PREFIX}/step-0000000010", "meta.json")
    s3.client.put_object(Bucket=BUCKET, Key=mkey, Body=json.dumps(marker).encode())
    assert dcp_ckpt.verify(f"{URL}/step-0000000010")["step"] == 10
    resumed = _train(12)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert f"warn unloadable_checkpoint={URL}/step-0000000010" in resumed.stdout
    assert f"falling_back_to={URL}/step-0000000005" in resumed.stdout
    assert f"resumed_from_step=5 checkpoint={URL}/step-0000000005" in resumed.stdout


@pytest.mark.timeout(300)
@pytest.mark.parametrize("engine", ["torchrec", "ddp"])
def test_a_job_with_loader_workers_and_a_bucket_exits_after_done(s3, engine):  # noqa: F811
    """At interpreter exit CPython terminate()s the daemon loader workers (SIGTERM, which they
    ignore so that a reclaim cannot kill them before the save) and then joins them with no
    timeout: unless the trainer shuts its workers down itself, the job says done and never
    exits (s3fs's threads keep the loader alive until then)."""
    s3.client.create_bucket(Bucket=BUCKET)
    proc = subprocess.Popen([sys.executable, str(TRAIN_PY), "--engine", engine, "--steps", "4", "--log-every", "2",
                             *SMALL, "--num-workers", "1", "--checkpoint-every-steps", "2"],
                            env=clean_env(CHECKPOINT_DIR=URL), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    lines, done = [], threading.Event()

    def read():
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("done "):
                done.set()
    threading.Thread(target=read, daemon=True).start()
    try:
        assert done.wait(240), "".join(lines)[-2000:]
        t0 = time.monotonic()
        code = proc.wait(60)              # a shutdown takes a second or so: 60 s is a hang
        assert code == 0, "".join(lines)[-2000:]
        print(f"exited {time.monotonic() - t0:.1f}s after done")
    except subprocess.TimeoutExpired:
        pytest.fail("the trainer printed done and did not exit within 60 s")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


@pytest.mark.timeout(120)
def test_a_rank_uploads_its_shards_as_several_streams(s3):  # noqa: F811
    """DCP's fsspec writer defaults to one thread, one object per rank: a SIGTERM save to a
    bucket would go up as one stream within the reclaim notice. Ours writes several."""
    import torch

    import dcp_ckpt

    s3.client.create_bucket(Bucket=BUCKET)
    state = {f"t{i}": torch.full((64, 8), float(i)) for i in range(16)}
    path = dcp_ckpt.save(URL, 3, state, {"config": {}}, keep=2, is_main=True)
    shards = [n for n in dcp_ckpt.verify(path)["files"] if n.endswith(".distcp")]
    assert len(shards) == dcp_ckpt.WRITE_THREADS > 1, shards
    back = {k: torch.zeros_like(v) for k, v in state.items()}
    dcp_ckpt.load(path, back)
    assert all(torch.equal(back[k], state[k]) for k in state)
