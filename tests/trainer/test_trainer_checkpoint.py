import os

import pytest
import torch

import checkpoint
from model import build_model
from optim import build_optimizer

from trainer_helpers import SMALL, run_single, step_lines

ROWS = [9, 4, 6]


def _trained(steps=3, seed=0):
    torch.manual_seed(seed)
    model = build_model("deepfm", ROWS, 4, [8])
    opt = build_optimizer("adam", model)
    for i in range(steps):
        g = torch.Generator().manual_seed(i)
        dense = torch.randn(8, 13, generator=g)
        sparse = torch.stack([torch.randint(0, r, (8,), generator=g) for r in ROWS], 1)
        model(dense, sparse).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
    return model, opt


@pytest.mark.timeout(30)
def test_save_is_atomic_and_newest_valid_wins(tmp_path):
    d = str(tmp_path)
    checkpoint.save(d, 10, {"step": 10, "x": torch.ones(3)})
    checkpoint.save(d, 20, {"step": 20, "x": torch.full((3,), 2.0)})
    assert [s for s, _ in checkpoint.list_checkpoints(d)] == [10, 20]
    assert not [n for n in os.listdir(d) if n.endswith(".tmp")]
    # a writer killed mid-write leaves only a tmp file: it is never a candidate
    good = open(checkpoint.path_for(d, 20), "rb").read()
    (tmp_path / ".ckpt-0000000030.pt.abc123.tmp").write_bytes(good[: len(good) // 2])
    step, path, state = checkpoint.latest_valid(d)
    assert step == 20 and state["step"] == 20 and torch.equal(state["x"], torch.full((3,), 2.0))
    checkpoint.remove_stale_tmp(d)
    assert not [n for n in os.listdir(d) if n.endswith(".tmp")]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "garbage"])
def test_corrupt_newest_is_skipped(tmp_path, damage):
    d = str(tmp_path)
    checkpoint.save(d, 1, {"step": 1})
    p = checkpoint.save(d, 2, {"step": 2})
    blob = open(p, "rb").read()
    if damage == "truncate":
        blob = blob[:-7]
    elif damage == "flip":
        blob = blob[:-5] + bytes([blob[-5] ^ 0xFF]) + blob[-4:]
    elif damage == "empty":
        blob = b""
    else:
        blob = b"not a checkpoint at all" * 10
    open(p, "wb").write(blob)
    logs = []
    step, _, state = checkpoint.latest_valid(d, log=logs.append)
    assert step == 1 and state["step"] == 1
    assert logs and "skipping_checkpoint" in logs[0]
    with pytest.raises(checkpoint.CorruptCheckpoint):
        checkpoint.load(p)


@pytest.mark.timeout(30)
def test_keep_last_k(tmp_path):
    for s in range(1, 7):
        checkpoint.save(str(tmp_path), s, {"step": s}, keep=3)
    assert [s for s, _ in checkpoint.list_checkpoints(str(tmp_path))] == [4, 5, 6]


@pytest.mark.timeout(30)
def test_no_checkpoint_dir_means_nothing_to_resume(tmp_path):
    assert checkpoint.latest_valid(str(tmp_path / "missing")) is None
    assert checkpoint.latest_valid(str(tmp_path)) is None


@pytest.mark.timeout(30)
def test_resume_restores_model_and_optimizer_state(tmp_path):
    model, opt = _trained(steps=3)
    checkpoint.save(str(tmp_path), 3, {"step": 3, "model": model.state_dict(), "optimizer": opt.state_dict()})
    fresh_model, fresh_opt = _trained(steps=0, seed=99)
    step, _, state = checkpoint.latest_valid(str(tmp_path))
    fresh_model.load_state_dict(state["model"])
    fresh_opt.load_state_dict(state["optimizer"])
    assert step == 3
    for a, b in zip(model.state_dict().values(), fresh_model.state_dict().values()):
        assert torch.equal(a, b)
    sa, sb = opt.state_dict()["state"], fresh_opt.state_dict()["state"]
    assert sa.keys() == sb.keys()
    for k in sa:
        assert torch.equal(sa[k]["exp_avg_sq"], sb[k]["exp_avg_sq"]) and float(sa[k]["step"]) == 3


@pytest.mark.timeout(120)
@pytest.mark.parametrize("engine", ["torchrec", "ddp"])
def test_interrupted_then_resumed_run_matches_uninterrupted_run(tmp_path, engine):
    """Resume restores weights, optimizer, step and data position: the loss trajectory after
    resuming is bit-for-bit the one an uninterrupted run produces (single process, CPU).
    torchrec: sharded DCP checkpoint, Adam state of the embeddings created before loading."""
    common = [*SMALL, "--log-every", "5", "--seed", "5", "--engine", engine]
    full = run_single(*common, "--steps", "30", "--checkpoint-dir", str(tmp_path / "a" / "ckpt"))
    assert full.returncode == 0, full.stderr
    first = run_single(*common, "--steps", "20", "--checkpoint-dir", str(tmp_path / "b" / "ckpt"),
                       "--checkpoint-every-steps", "10")
    assert first.returncode == 0, first.stderr
    second = run_single(*common, "--steps", "30", "--checkpoint-dir", str(tmp_path / "b" / "ckpt"))
    assert second.returncode == 0, second.stderr
    assert "resumed_from_step=20" in second.stdout
    resumed = step_lines(second.stdout)
    assert [int(r["step"]) for r in resumed] == [25, 30]
    expected = {int(r["step"]): r["loss"] for r in step_lines(full.stdout)}
    assert [r["loss"] for r in resumed] == [expected[25], expected[30]]


@pytest.mark.timeout(60)
def test_saving_a_committed_step_again_keeps_it(tmp_path, monkeypatch):
    """A step already committed (reached again after a resume) is not rewritten: the rewrite
    deleted the committed copy first, so a save killed midway lost the newest checkpoint."""
    import dcp_ckpt

    state = {"w": torch.arange(6.0)}
    path = dcp_ckpt.save(str(tmp_path), 5, state, {"config": {}}, keep=3, is_main=True)

    def killed(*_a, **_k):      # the reclaim's SIGKILL in the middle of the second write
        raise RuntimeError("killed mid-save")
    monkeypatch.setattr(dcp_ckpt.dcp, "save", killed)
    assert dcp_ckpt.save(str(tmp_path), 5, {"w": torch.zeros(6)}, {"config": {}}, keep=3, is_main=True) == path
    assert dcp_ckpt.verify(path)["step"] == 5
    back = {"w": torch.zeros(6)}
    monkeypatch.undo()
    dcp_ckpt.load(path, back)
    assert torch.equal(back["w"], torch.arange(6.0))
