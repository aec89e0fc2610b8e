"""Issue 39: the ddp engine's resume ships rank 0's checkpoint to the other ranks as tensors
(broadcast in place), not pickled whole through broadcast_object_list."""
import json
import os
import subprocess
import sys

import pytest

import checkpoint
from trainer_helpers import TRAINER_DIR, clean_env, free_port, run_single

ARGS = ["--engine", "ddp", "--model", "deepfm", "--optimizer", "adam", "--table-rows", "60000,40000,3000",
        "--embedding-dim", "8", "--mlp", "16", "--batch-size", "64", "--log-every", "1"]

RANK = r"""
import json, pickle, sys
sys.path.insert(0, sys.argv[1])
import torch, torch.distributed as dist
import train
pickled = []
real = dist.broadcast_object_list
def counting(objs, src=0, **kw):
    pickled.append(len(pickle.dumps(objs)) if dist.get_rank() == src else 0)
    return real(objs, src=src, **kw)
dist.broadcast_object_list = counting
args = train.parse_config(sys.argv[3:])
d = train.init_distributed(1.0)
engine, plan = train.make_engine(args, d, lambda m: None)
step, extras, where = engine.restore(sys.argv[2], train.config_fingerprint(args, plan))
engine.wrap()
state = sum(float(v.double().sum()) for s in engine.optimizer.state.values() for v in s.values() if torch.is_tensor(v))
steps = sorted({float(s["step"]) for s in engine.optimizer.state.values()})
weights = sum(float(p.double().sum()) for p in engine.module.parameters())
print(json.dumps({"rank": d.rank, "step": step, "pickled": sum(pickled), "state": state, "steps": steps,
                  "weights": weights}), flush=True)
dist.destroy_process_group()
"""


@pytest.mark.timeout(240)
def test_ddp_resume_broadcasts_tensors_not_a_pickled_state(tmp_path):
    ckpt = tmp_path / "ckpt"
    first = run_single(*ARGS, "--steps", "3", "--checkpoint-dir", str(ckpt), timeout=180)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    (_, path), = checkpoint.list_checkpoints(str(ckpt))
    size = os.path.getsize(path)
    assert size > 2_000_000                    # tables + Adam's two moments
    port = free_port()
    procs = [subprocess.Popen([sys.executable, "-c", RANK, str(TRAINER_DIR), str(ckpt), *ARGS],
                              env=clean_env(RANK=str(r), WORLD_SIZE="2", LOCAL_RANK=str(r), MASTER_ADDR="127.0.0.1",
                                            MASTER_PORT=str(port)),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in (0, 1)]
    out = []
    try:
        for p in procs:
            o, e = p.communicate(timeout=180)
            assert p.returncode == 0, o[-2000:] + e[-3000:]
            out.append(json.loads(o.strip().splitlines()[-1]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    r0, r1 = sorted(out, key=lambda x: x["rank"])
    assert r0["step"] == r1["step"] == 3
    assert r0["state"] == pytest.approx(r1["state"]) and r0["state"] != 0.0     # rank 1 has rank 0's moments
    assert r0["steps"] == r1["steps"] == [3.0]
    assert r0["weights"] == pytest.approx(r1["weights"])                       # DDP's own broadcast
    assert r0["pickled"] < 64 * 1024 < size, (r0["pickled"], size)
