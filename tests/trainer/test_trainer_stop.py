"""Issue 37 section 2 in this process: what the trainer does when a stop and a loader failure meet."""
import os
import signal

import pytest
from tests.needs import need_module

need_module("torchrec", "local")

import data  # noqa: E402
import dcp_ckpt  # noqa: E402

TINY = ["--table-rows", "60,40,30", "--embedding-dim", "4", "--mlp", "16,8", "--batch-size", "16",
        "--log-every", "2", "--optimizer", "sgd", "--checkpoint-every-minutes", "0"]


def _dying_loader(monkeypatch, at: int, stop_first: bool):
    """data.loader whose iterator, at batch `at`, raises what a DataLoader whose worker was
    killed raises; with stop_first the trainer's own SIGTERM arrives just before (killpg)."""
    real = data.loader

    def loader(*a, **kw):
        it = iter(real(*a, **kw))

        def gen():
            for k, batch in enumerate(it):
                if k == at:
                    if stop_first:
                        os.kill(os.getpid(), signal.SIGTERM)
                    raise RuntimeError("DataLoader worker (pid(s) 4242) exited unexpectedly")
                yield batch
        return gen()
    monkeypatch.setattr(data, "loader", loader)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("pipeline", ["sparse_dist", "off"])
def test_a_loader_that_dies_after_the_stop_still_saves(run_main, monkeypatch, tmp_path, pipeline):
    _dying_loader(monkeypatch, at=7, stop_first=True)
    ckpt = tmp_path / "ckpt"
    code, out = run_main(*TINY, "--steps", "100", "--pipeline", pipeline, "--checkpoint-dir", str(ckpt))
    assert code == 143, out
    assert "warn loader_failed_after_stop" in out and "exited unexpectedly" in out
    saved = [s for s, _ in dcp_ckpt.list_checkpoints(str(ckpt))]
    assert len(saved) == 1 and saved[0] > 0 and f"info sigterm step={saved[0]} exit=143" in out, (saved, out[-2000:])


@pytest.mark.timeout(120)
def test_a_loader_that_dies_without_a_stop_fails_the_job(run_main, monkeypatch, tmp_path):
    _dying_loader(monkeypatch, at=5, stop_first=False)
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        run_main(*TINY, "--steps", "100", "--checkpoint-dir", str(tmp_path / "ckpt"))


PROBE = """
import ctypes, signal, sys
sys.path.insert(0, sys.argv[1])
import data
data.ignore_stop_signals(0)
got = ctypes.c_int()
ctypes.CDLL(None).prctl(2, ctypes.byref(got), 0, 0, 0)        # PR_GET_PDEATHSIG
print(signal.getsignal(signal.SIGTERM) is signal.SIG_IGN, signal.getsignal(signal.SIGINT) is signal.SIG_IGN,
      got.value == signal.SIGKILL)
"""


@pytest.mark.timeout(60)
def test_loader_workers_ignore_the_stop_signals_but_not_the_trainers_death():
    """What the DataLoader worker_init_fn does to a worker (in a fresh process: a DataLoader
    forked from this test process would inherit the threads of earlier in-process tests)."""
    import subprocess
    import sys

    from trainer_helpers import TRAINER_DIR, clean_env

    src = data.SyntheticCriteo([10, 10], 4, 0)
    assert data.loader(src, 0, num_workers=2).worker_init_fn is data.ignore_stop_signals
    assert data.loader(src, 0, num_workers=0).worker_init_fn is None
    out = subprocess.run([sys.executable, "-c", PROBE, str(TRAINER_DIR)], env=clean_env(), capture_output=True,
                         text=True, timeout=50)
    assert out.stdout.split() == ["True", "True", "True"], out.stdout + out.stderr


@pytest.mark.timeout(120)
@pytest.mark.parametrize("engine", ["torchrec", "ddp"])
def test_each_save_says_how_long_and_warns_past_the_reclaim_notice(run_main, tmp_path, engine):
    """Issue 37: the save time (and size, rate) of every checkpoint in the log, and a warning
    when it is longer than the spot notice the cloud gives (RECLAUNCH_RECLAIM_NOTICE_SECONDS)."""
    code, out = run_main(*TINY, "--engine", engine, "--steps", "4", "--checkpoint-every-steps", "2",
                         "--checkpoint-dir", str(tmp_path / "ckpt"),
                         env={"RECLAUNCH_FAULT": "slow_save:0.6", "RECLAUNCH_RECLAIM_NOTICE_SECONDS": "0.5"})
    assert code == 0, out
    saves = [line for line in out.splitlines() if line.startswith("info checkpoint step=")]
    assert len(saves) == 2, out
    for line in saves:
        fields = dict(kv.split("=", 1) for kv in line.split()[2:])
        assert float(fields["seconds"]) >= 0.6 and int(fields["bytes"]) > 1000 and float(fields["mb_per_s"]) > 0
    assert out.count("warn checkpoint_slower_than_notice") == 2 and "notice=0.5" in out
    code, out = run_main(*TINY, "--engine", engine, "--steps", "2", "--checkpoint-dir", str(tmp_path / "again"),
                         env={"RECLAUNCH_FAULT": "", "RECLAUNCH_RECLAIM_NOTICE_SECONDS": "120"})
    assert code == 0 and "info checkpoint step=2" in out and "slower_than_notice" not in out, out
