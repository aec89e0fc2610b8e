"""Every optimizer the trainer offers saves and resumes on two TorchRec ranks (torchrun, gloo).

SGD keeps no optimizer state, so nothing is saved under `optim`; a restore that asked DCP for it
failed ("Missing key in checkpoint state_dict: optim") and no SGD job could ever resume."""
import subprocess
import sys
from pathlib import Path

import pytest
from tests.needs import need_module

need_module("torchrec", "local")

from config import CHOICES  # noqa: E402
from trainer_helpers import clean_env, free_port  # noqa: E402

WORKER = Path(__file__).resolve().parent / "resume_worker.py"


@pytest.mark.timeout(240)
def test_two_ranks_save_then_resume_with_every_optimizer(tmp_path):
    offered = CHOICES["optimizer"]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1", "--nproc-per-node=2",
           "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{free_port()}", "--max-restarts=0",
           str(WORKER), str(tmp_path), ",".join(offered)]
    r = subprocess.run(cmd, env=clean_env(), capture_output=True, text=True, timeout=220)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    lines = [line for line in r.stdout.splitlines() if line.startswith(("resumed ", "failed "))]
    assert [line.split()[1].rstrip(":") for line in lines] == list(offered), out[-3000:]
    assert all(line.startswith("resumed ") for line in lines), "\n".join(lines)
