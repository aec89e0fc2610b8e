"""examples/trainer is a script directory, not a package: put it (and our helpers) on sys.path."""
import sys
from pathlib import Path

import pytest
from tests.needs import need_module

need_module("torch", "local")
need_module("numpy", "local")

for _p in (Path(__file__).resolve().parents[2] / "examples" / "trainer", Path(__file__).resolve().parent):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))


@pytest.fixture
def run_main(monkeypatch, capsys):
    """train.main in this process, with a clean environment; -> (exit code, stdout)."""
    import os
    import signal

    import train

    old = signal.getsignal(signal.SIGTERM)
    for key in list(os.environ):
        if key.startswith(("RECLAUNCH_", "TORCHELASTIC_")) or key in (
                "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "CHECKPOINT_DIR", "DATA_DIR"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")

    def run(*argv, env=None):
        for k, v in (env or {}).items():
            monkeypatch.setenv(k, v)
        code = train.main(list(argv))
        return code, capsys.readouterr().out

    yield run
    signal.signal(signal.SIGTERM, old)
