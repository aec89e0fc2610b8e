"""Issue 37 section 2: the local reclaim drill signals as the kubelet does (kubernetes.io/docs/
concepts/workloads/pods/pod-termination: TERM to the main process of each container, KILL to
whatever remains after the grace). Here the node's torchrun agent plays the container's main
process: the training processes hear the stop from it, never from the supervisor."""

from __future__ import annotations

import json
import time

import pytest

from reclaunch.providers.options import UpOptions

from tests.local.waiting import wait_for

# A worker that records who sent it SIGTERM (siginfo si_pid) and who its parent is, then
# exits as a trainer would after its checkpoint (143). stop_after: it ignores nothing, so a
# worker still alive after the grace is one the KILL must take.
WORKER = r"""
import json, os, signal, sys, time
out = sys.argv[1]
me = f"{os.environ['RECLAUNCH_LOCAL_NODE'].split(':')[2]}-{os.environ['RANK']}-{os.getpid()}"
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
with open(os.path.join(out, me + ".ready"), "w") as f:
    f.write(str(os.getppid()))
info = signal.sigwaitinfo({signal.SIGTERM})
with open(os.path.join(out, me + ".json"), "w") as f:
    json.dump({"sender": info.si_pid, "parent": os.getppid()}, f)
if os.environ.get("HOLD"):
    time.sleep(3600)          # deaf to the stop: only the KILL after the grace ends it
sys.exit(143)
"""


def _records(out_dir, suffix):
    return {p.name[:-len(suffix)]: p.read_text() for p in out_dir.glob(f"*{suffix}")}


@pytest.mark.timeout(180)
@pytest.mark.parametrize("hold", [False, True])
def test_the_drill_terms_the_launcher_only_then_kills_after_the_grace(home, provider, helpers, tmp_path, hold):
    out = tmp_path / "signals"
    out.mkdir()
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    name = "sig-hold" if hold else "sig"
    spec = helpers.make_spec(name, command=["python", str(script)], args=[str(out)], max_restarts=0,
                             teardown="never", env={"HOLD": "1"} if hold else {})
    provider.up(helpers.local_plan(spec), UpOptions(detach=True), cwd=str(helpers.REPO))
    try:
        wait_for(lambda: len(_records(out, ".ready")) >= 2, 90, "both workers up")
        state = json.loads((home / "local" / name / "state.json").read_text())
        supervisor = state["supervisor_pid"]
        agent = next(n["pid"] for n in state["nodes"] if n["index"] == 1)
        t0 = time.monotonic()
        rec = provider.preempt(name, 1, notice=4, replace_after=600)
        waited = time.monotonic() - t0
        assert rec["status"] == "killed"
        got = {k: json.loads(v) for k, v in _records(out, ".json").items() if k.startswith("1-")}
        assert got, "node 1's worker heard no SIGTERM"
        for who, r in got.items():
            assert r["sender"] == agent == r["parent"], (who, r, {"supervisor": supervisor, "agent": agent})
        # A worker that exits on the TERM ends the drill early; one deaf to it waits out the grace.
        assert rec["graceful"] is (not hold)
        assert (waited >= 3.5) is hold, waited
    finally:
        provider.down(name, yes=True)
