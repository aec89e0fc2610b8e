"""The rendezvous store we render for spot jobs really hosts a c10d rendezvous: two torchrun
agents that are not the store (is_host=false, as the PyTorchJob's rdzvConf says) meet on it,
agree on a world of 2 and all-reduce over gloo. Runs on 127.0.0.1 with CPU torch."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from tests.needs import need_module

from reclaunch.manifests.rdzv import PORT, STORE_SCRIPT

WORKER = """
import torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.ones(1) * (dist.get_rank() + 1)
dist.all_reduce(t)
print("RESULT", dist.get_rank(), dist.get_world_size(), t.item(), flush=True)
dist.destroy_process_group()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_agents_rendezvous_on_the_store_pod_script(tmp_path: Path) -> None:
    need_module("torch", "local")
    port = _free_port()
    store = subprocess.Popen([sys.executable, "-c", STORE_SCRIPT.replace(str(PORT), str(port))],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert "listening" in store.stdout.readline()
        (tmp_path / "w.py").write_text(WORKER)
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1:2",
               "--nproc-per-node", "1", "--rdzv-backend", "c10d",
               "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", "fit",
               "--rdzv-conf", "is_host=false,join_timeout=60", "--max-restarts", "0",
               str(tmp_path / "w.py")]
        agents = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, cwd=tmp_path) for _ in range(2)]
        outs = [a.communicate(timeout=120)[0] for a in agents]
    finally:
        store.kill()
        store.wait(timeout=10)
    results = sorted(line.split()[1:] for out in outs for line in out.splitlines()
                     if line.startswith("RESULT"))
    assert [a.returncode for a in agents] == [0, 0], outs
    assert results == [["0", "2", "3.0"], ["1", "2", "3.0"]]
