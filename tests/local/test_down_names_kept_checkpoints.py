"""`down` of a local cluster whose checkpoints live outside its directory (job.checkpoint.path
an absolute path of the user's) keeps them: it must say so and name them, never claim it
deleted the checkpoints (issue 41 follow-up)."""

from __future__ import annotations

import json

import pytest

from reclaunch.errors import UsageError
from reclaunch.providers.local import proc as lp
from reclaunch.providers.local import teardown


def _cluster(home, tmp_path):
    root = lp.cluster_dir("far")
    root.mkdir(parents=True)
    ckpt = tmp_path / "my-checkpoints"
    ckpt.mkdir()
    (ckpt / "step-100.pt").write_bytes(b"weights")
    (root / "launch.json").write_text(json.dumps({"env": {"CHECKPOINT_DIR": str(ckpt)}}))
    return root, ckpt


@pytest.mark.parametrize("keep_storage", [False, True])
def test_down_names_the_checkpoints_it_kept(home, tmp_path, capsys, keep_storage):
    root, ckpt = _cluster(home, tmp_path)
    teardown.down(root, "far", yes=True, keep_storage=keep_storage, grace=1.0)
    out = capsys.readouterr().out
    assert (ckpt / "step-100.pt").exists() and not (root / "launch.json").exists()
    assert f"kept the checkpoints in {ckpt}" in out, out
    assert "checkpoints, data" not in out


def test_down_confirmation_does_not_promise_to_delete_them(home, tmp_path):
    root, ckpt = _cluster(home, tmp_path)
    with pytest.raises(UsageError) as err:
        teardown.down(root, "far", yes=False)
    assert f"keep the checkpoints in {ckpt}" in str(err.value), str(err.value)
    assert "logs and checkpoints" not in str(err.value)
