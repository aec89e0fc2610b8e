import json
import re

import pytest

import data
import train
from trainer_helpers import SMALL, run_single


@pytest.mark.timeout(30)
def test_defaults_env_and_flag_precedence():
    args = train.parse_config([], environ={})
    assert (args.model, args.batch_size, args.grad_accum, args.optimizer) == ("deepfm", 256, 1, "adam")
    assert args.table_rows == data.DEFAULT_TABLE_ROWS and len(args.table_rows) == 26
    env = {"RECLAUNCH_MODEL": "dcnv2", "RECLAUNCH_BATCH_SIZE": "1e3", "RECLAUNCH_TABLE_ROWS": "1_000,20",
           "RECLAUNCH_MLP": "8,4", "CHECKPOINT_EVERY_MINUTES": "0.5", "DATA_DIR": "/data",
           "CHECKPOINT_DIR": "/ckpt", "RECLAUNCH_STEPS": "7", "RECLAUNCH_PRECISION": "fp16",
           "RECLAUNCH_OPTIMIZER": "rowwise_adagrad", "RECLAUNCH_SEED": "3", "RECLAUNCH_GRAD_ACCUM": "",
           "RECLAUNCH_EMBEDDING_DIM": "32", "RECLAUNCH_LOG_EVERY": "2", "RECLAUNCH_NUM_WORKERS": "1"}
    args = train.parse_config([], environ=env)
    assert (args.model, args.batch_size, args.table_rows, args.mlp) == ("dcnv2", 1000, [1000, 20], [8, 4])
    assert (args.checkpoint_every_minutes, args.data_dir, args.checkpoint_dir) == (0.5, "/data", "/ckpt")
    assert (args.steps, args.precision, args.optimizer, args.seed, args.grad_accum) == (7, "fp16", "rowwise_adagrad", 3, 1)
    assert (args.embedding_dim, args.log_every, args.num_workers) == (32, 2, 1)
    args = train.parse_config(["--model", "deepfm", "--batch-size", "64", "--checkpoint-dir", "/x"], environ=env)
    assert (args.model, args.batch_size, args.checkpoint_dir) == ("deepfm", 64, "/x")


@pytest.mark.timeout(30)
@pytest.mark.parametrize("bad", [["--model", "xdeepfm"], ["--engine", "tf"], ["--precision", "fp8"], ["--batch-size", "x"],
                                 ["--optimizer", "lamb"], ["--grad-accum", "0"]])
def test_bad_values_are_usage_errors(bad):
    with pytest.raises(SystemExit) as exc:
        train.parse_config(bad, environ={})
    assert exc.value.code == 2


@pytest.mark.timeout(60)
def test_single_process_dcnv2_grad_accum_rowwise_adagrad(tmp_path):
    res = tmp_path / "out" / "r.json"
    p = run_single(*SMALL, "--model", "dcnv2", "--cross-rank", "16", "--grad-accum", "2", "--optimizer",
                   "rowwise_adagrad", "--steps", "40", "--log-every", "10", "--result", str(res))
    assert p.returncode == 0, p.stderr
    lines = [l for l in p.stdout.splitlines() if l.startswith(("step=", "done "))]
    assert all(re.fullmatch(r"step=\d+ loss=\d+\.\d{4} samples_per_s=\d+\.\d", l) for l in lines[:-1]), lines
    assert re.fullmatch(r"done steps=40 final_loss=\d+\.\d{4} samples_per_s=\d+\.\d", lines[-1]), lines
    result = json.loads(res.read_text())
    assert result["global_batch"] == 256 and result["steps"] == 40 and result["model"] == "dcnv2"
    assert result["final_loss"] < result["first_loss"]


@pytest.mark.timeout(60)
def test_trains_on_npy_shards_from_data_dir(tmp_path):
    import numpy as np
    src = data.SyntheticCriteo([50] * 26, 400, seed=1)
    d, s, y = src.batch(0)
    (tmp_path / "data").mkdir()
    for kind, arr in (("dense", d), ("sparse", s), ("labels", y)):
        np.save(tmp_path / "data" / f"shard0.{kind}.npy", arr)
    p = run_single("--table-rows", ",".join(["50"] * 26), "--embedding-dim", "4", "--mlp", "8",
                   "--batch-size", "32", "--steps", "10", "--log-every", "5", "--data-dir", str(tmp_path / "data"),
                   "--result", str(tmp_path / "r.json"))
    assert p.returncode == 0, p.stderr
    assert "dataset=ShardReader" in p.stdout
