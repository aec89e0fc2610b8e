"""Helpers for the reference-trainer tests."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

TRAINER_DIR = Path(__file__).resolve().parents[2] / "examples" / "trainer"
TRAIN_PY = TRAINER_DIR / "train.py"

# Small and quick on a 2-core CPU.
SMALL_ROWS = [200, 100, 50, 20, 10, 5, 3, 300, 150, 80, 60, 40, 30, 25, 20, 15, 12, 10, 8, 6, 5, 4, 3, 3, 2, 2]
SMALL = ["--table-rows", ",".join(map(str, SMALL_ROWS)), "--embedding-dim", "8", "--mlp", "32,16", "--batch-size", "128"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(**extra: str) -> dict[str, str]:
    """The test process's env minus anything that would steer the trainer."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RECLAUNCH_", "TORCHELASTIC_")) and k not in
           ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
            "DATA_DIR", "CHECKPOINT_DIR", "CHECKPOINT_EVERY_MINUTES")}
    env["OMP_NUM_THREADS"] = "1"
    env.update(extra)
    return env


def torchrun_cmd(nproc: int, *args: str, max_restarts: int = 0) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--nnodes=1", f"--nproc-per-node={nproc}",
            "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{free_port()}",
            f"--max-restarts={max_restarts}", "--monitor-interval=0.2", str(TRAIN_PY), *args]


def run_single(*args: str, timeout: float = 90, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TRAIN_PY), *args], env=clean_env(**(env or {})), capture_output=True,
                          text=True, timeout=timeout)


def step_lines(text: str) -> list[dict[str, float]]:
    out = []
    for line in text.splitlines():
        if line.startswith("step="):
            out.append({k: float(v) for k, v in (kv.split("=") for kv in line.split())})
    return out
