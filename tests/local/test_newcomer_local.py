"""Issue 42 on cloud: local: the tour's `up --detach` after `make demo`, and what `up` says when
the S3 endpoint of a bucket rehearsal is missing."""

from __future__ import annotations

import pytest

from reclaunch.errors import ProviderError
from reclaunch.providers.local import proc as lp
from reclaunch.providers.local import rerun


def _finished(root, *, torn_down: bool, ckpt: str) -> dict:
    root.mkdir(parents=True)
    lp.write_json(root / "launch.json", {"env": {"CHECKPOINT_DIR": ckpt}})
    state = {"state": "Succeeded", "torn_down": torn_down, "progress": {"done": {"step": 300}}}
    lp.write_json(root / "state.json", state)
    return state


def test_a_run_its_teardown_took_down_trains_afresh(tmp_path) -> None:
    root = tmp_path / "local-deepfm"
    ckpt = root / "ckpt"
    state = _finished(root, torn_down=True, ckpt=str(ckpt))
    (ckpt / "step-300").mkdir(parents=True)
    assert rerun.finished_before(root, state, fresh=False) is None     # go ahead
    assert not ckpt.exists() and not (root / "state.json").exists()   # from step 0


def test_a_run_still_up_or_with_checkpoints_of_its_own_says_already_finished(tmp_path) -> None:
    root = tmp_path / "kept"
    state = _finished(root, torn_down=False, ckpt=str(root / "ckpt"))
    said = rerun.finished_before(root, state, fresh=False)
    assert said is not None and "already finished (Succeeded at step 300)" in said.message
    for ckpt in ("s3://b/run-1", str(tmp_path / "mine")):   # outlive the cluster: the user's
        other = tmp_path / ("x" + str(len(ckpt)))
        state = _finished(other, torn_down=True, ckpt=ckpt)
        said = rerun.finished_before(other, state, fresh=False)
        assert said is not None and "--fresh" in said.message


def test_a_bucket_without_an_endpoint_says_to_set_the_endpoint(monkeypatch, tmp_path) -> None:
    pytest.importorskip("boto3")
    from reclaunch.providers.local import bucket

    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(ProviderError) as info:      # the spec sets storage.kind: bucket
        bucket.ensure("local-s3", {"bucket": "local-s3-ckpt", "prefix": "run-1", "create": True},
                      tmp_path)
    text = f"{info.value} {info.value.hint}"
    assert "AWS_ENDPOINT_URL is not set" in text and "export AWS_ENDPOINT_URL=" in text
    assert "storage.kind" not in text
    # a bucket the user named (storage.kind none) may also be created by `up`: then it says so
    assert "storage.kind: bucket" in bucket._fix({"create": False})
