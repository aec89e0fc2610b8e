"""`exec NAME --rank R` with R past the job's ranks says it is out of range and names the
ranks, instead of "no process of rank R is running now" (which invites a retry that can never
succeed; issue 41 follow-up)."""

from __future__ import annotations

import json

import pytest

from reclaunch.errors import UsageError
from reclaunch.providers.local import proc as lp
from reclaunch.providers.local import shell


@pytest.fixture
def running(home, monkeypatch):
    root = lp.cluster_dir("ranks")
    root.mkdir(parents=True)
    (root / "launch.json").write_text(json.dumps({"nodes": 2, "min_nodes": 1, "max_nodes": 3,
                                                  "nproc": 2}))
    (root / "state.json").write_text(json.dumps({"state": "Running", "nodes": [{}, {}]}))
    monkeypatch.setattr(lp, "supervisor_alive", lambda state: True)   # no real job needed
    monkeypatch.setattr(lp, "run_pids", lambda name: [])


@pytest.mark.parametrize("rank", [6, 99999999999999999999])
def test_a_rank_past_the_job_is_out_of_range(running, rank):
    with pytest.raises(UsageError) as err:
        shell.rank_processes("ranks", rank)
    msg = str(err.value)
    assert f"rank {rank} is out of range" in msg and "0..5" in msg, msg
    assert "running now" not in msg and len(msg) < 300


def test_a_rank_in_range_but_not_running_says_so(running):
    with pytest.raises(UsageError, match="no process of rank 5 is running now"):
        shell.rank_processes("ranks", 5)


def test_the_cli_says_it_in_one_line_exit_2(running, capsys):
    from reclaunch.cli import main
    from reclaunch.runtime.journal import ClusterRecord, Journal

    Journal("ranks").save_record(ClusterRecord(name="ranks", cloud="local"))
    with pytest.raises(SystemExit) as exc:
        main(["exec", "ranks", "--rank", "99999999999999999999", "--", "true"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "out of range" in err and "Traceback" not in err, err
