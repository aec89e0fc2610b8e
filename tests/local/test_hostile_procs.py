"""Issue 26 with real processes: a job's setsid daemon does not survive `down` even after
the supervisor itself was SIGKILLed (the processes it recorded are stopped by identity);
a trainer printing garbage does not take the cluster down."""

from __future__ import annotations

import io
import json
import signal

import pytest

from reclaunch.providers.local import ident
from reclaunch.providers.local import proc as lp

from tests.local.test_local_state import start_daemon
from tests.local.waiting import wait_for


@pytest.mark.timeout(120)
def test_a_setsid_daemon_does_not_survive_down_after_the_supervisor_was_killed(
        home, provider, helpers, tmp_path):
    pid = start_daemon(provider, helpers, tmp_path, "orphan")
    who = ident.identity(pid)
    root = home / "local" / "orphan"
    try:
        wait_for(lambda: str(pid) in (lp.read_json(root / "state.json") or {}).get("procs", {}),
                 30, "the supervisor to record the daemon")
        state = json.loads((root / "state.json").read_text())
        sup, sup_id = state["supervisor_pid"], state["supervisor_id"]
        ident.signal_verified({sup: sup_id}, signal.SIGKILL)   # no teardown from it now
        wait_for(lambda: not ident.alive_as(sup, sup_id), 10, "the supervisor to die")
        assert ident.alive_as(pid, who), "the daemon should still run before down"
        provider.down("orphan", yes=True)
        assert not ident.alive_as(pid, who), "a setsid daemon outlived `down` after a SIGKILL"
        assert lp.run_pids("orphan") == []
    finally:
        ident.signal_verified({pid: who}, signal.SIGKILL) if who else None


GARBAGE = ("import sys, time\n"
           "for line in ['step=1 loss=0.5 samples_per_s=1.2.3', 'step=' + '9' * 5000 + ' loss=1 samples_per_s=1',\n"
           "             '\\x1b]0;x\\x07[/bogus] step=2 loss=[link=x] samples_per_s=nan',\n"
           "             'RECLAUNCH_METRICS ' + '[' * 100000, 'x' * 300000, 'step=3 loss=0.25 samples_per_s=10']:\n"
           "    print(line, flush=True)\n"
           "sys.stdout.write('y' * 200000); sys.stdout.flush()\n")


@pytest.mark.timeout(120)
def test_a_job_printing_garbage_finishes_normally(home, provider, helpers):
    from rich.console import Console

    spec = helpers.make_spec("garbage", command=["python", "-c", GARBAGE], args=[],
                             nodes=1, min_nodes=1, max_nodes=1)
    out = io.StringIO()
    st = provider.up(helpers.local_plan(spec), cwd=str(helpers.REPO),
                     console=Console(file=out, width=200))
    assert st.state == "Succeeded", st.message
    state = json.loads((home / "local" / "garbage" / "state.json").read_text())
    assert state["progress"]["step"] == 3 and state["progress"]["bad_lines"] >= 2
    assert "\x1b]0;" not in out.getvalue()
    provider.down("garbage", yes=True)
