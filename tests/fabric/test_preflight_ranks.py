"""The preflight script with 4 gloo ranks whose clocks disagree: every rank must issue the
same collectives (issue 24: a per-rank iteration count died with "collective mismatch")."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from reclaunch.manifests.preflight import ALLREDUCE_SCRIPT, parse_nccl_tests

TORCHRUN = shutil.which("torchrun", path=os.path.dirname(sys.executable))

# Rank r's clock runs (1 + 3000 r) times fast: rank 0 times a probe of ~1 ms (20 iterations),
# rank 3 one of seconds (1 iteration). Only a count the ranks agree on survives this.
SKEW = '''
import os, time
_real = time.perf_counter
_k = 1 + 3000 * int(os.environ["RANK"])
time.perf_counter = lambda: _real() * _k
'''


@pytest.mark.skipif(TORCHRUN is None, reason="torch is not installed (pip install 'reclaunch[local]')")
def test_four_ranks_with_mismatched_timings_agree_on_the_count(tmp_path):
    env = {**os.environ, "PET_NNODES": "1", "PET_NPROC_PER_NODE": "4",
           # DETAIL makes gloo compare every collective across ranks: a mismatch is an error
           # at once instead of a hang that only the timeout below would end.
           "TORCH_DISTRIBUTED_DEBUG": "DETAIL", "OMP_NUM_THREADS": "1",
           "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    try:
        out = subprocess.run([TORCHRUN, "--no-python", "python3", "-c", SKEW + ALLREDUCE_SCRIPT,
                              "-b", "1M", "-e", "16M", "-f", "4"], env=env, cwd=tmp_path,
                             capture_output=True, text=True, timeout=240)
    except subprocess.TimeoutExpired as exc:   # a deadlock: the ranks never finished
        pytest.fail(f"preflight ranks deadlocked: {str(exc.stderr)[-1500:]}")
    assert out.returncode == 0, out.stderr[-3000:]
    r = parse_nccl_tests(out.stdout)
    assert r.ranks == 4 and r.wrong == 0 and r.avg_busbw is not None
    assert [row.size for row in r.rows] == [1 << 20, 4 << 20, 16 << 20]


@pytest.mark.skipif(TORCHRUN is None, reason="torch is not installed (pip install 'reclaunch[local]')")
def test_all_gather_sweep_checks_its_values_and_parses(tmp_path):
    """The collective TCPX/TCPXO floors were measured with (profile.threshold_collective)."""
    env = {**os.environ, "PET_NNODES": "1", "PET_NPROC_PER_NODE": "4", "OMP_NUM_THREADS": "1",
           "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    out = subprocess.run([TORCHRUN, "--no-python", "python3", "-c", ALLREDUCE_SCRIPT,
                          "-b", "64K", "-e", "4M", "-f", "8", "-c", "all_gather"], env=env,
                         cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "all_gather_perf" in out.stdout
    r = parse_nccl_tests(out.stdout)
    assert r.ranks == 4 and r.wrong == 0 and r.avg_busbw is not None
    assert [row.size for row in r.rows] == [1 << 16, 1 << 19, 1 << 22]
    assert r.rows[0].redop == "none"
