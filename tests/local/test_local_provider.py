"""cloud: local for real: torchrun agents, c10d rendezvous, the reference trainer."""

from __future__ import annotations

import io
import socket
import sys
import time
from pathlib import Path

import pytest

from reclaunch.errors import ProviderError, UsageError
from reclaunch.providers.local import proc as lp

from tests.local.waiting import wait_for  # noqa: E402
from reclaunch.providers.options import UpOptions

QUICK = ["python", "-c", "import os; print('rank', os.environ['RANK'], 'of', os.environ['WORLD_SIZE'])"]


def assert_nothing_left(name: str, port: int | None) -> None:
    left = wait_for(lambda: not lp.run_pids(name) or None, 15, "no processes") if lp.run_pids(name) else True
    assert left and lp.run_pids(name) == []
    if port:
        assert lp.port_free(port), f"rendezvous port {port} still bound"


@pytest.mark.timeout(240)
def test_end_to_end_two_nodes_succeed_and_tear_down(home, provider, helpers):
    from rich.console import Console

    spec = helpers.make_spec("e2e", args=["--model", "deepfm", "--steps", "120", "--log-every", "20"])
    out = io.StringIO()
    t0 = time.monotonic()
    st = provider.up(helpers.local_plan(spec), cwd=str(helpers.REPO), console=Console(file=out, width=140))
    text = out.getvalue()
    assert st.state == "Succeeded", (st.message, text)
    assert "final throughput" in text and "step    120" in text, text
    prog = st.details["progress"]
    assert prog["done"]["step"] == 120
    losses = [loss for _, loss in prog["losses"]]
    assert losses[-1] < losses[0], losses
    result = st.details["result"]
    assert result["world_size"] == 2 and result["status"] == "completed"
    assert provider.status("e2e").state == "Succeeded"
    assert st.details["torn_down"]
    assert_nothing_left("e2e", st.details["port"])
    ranks = {lp.split_rank(line)[0] for line in provider.logs("e2e")}
    assert 0 in ranks                                           # the trainer logs on rank 0 only
    assert all(line.startswith("[rank0]: ") for line in provider.logs("e2e", rank=0))
    # the run left its measurement record, and the next plan of the spec is priced with it
    from reclaunch.planner import make_plan
    from reclaunch.runtime.measurements import load_all, plan_context
    recs, bad = load_all()
    assert len(recs) == 1 and not bad and recs[0].run == "e2e" and recs[0].samples_per_s > 0
    again = make_plan(spec, context=plan_context(spec))
    from reclaunch.planner.measured import why_not_clean
    assert recs[0].reclaims == 0 and recs[0].load_per_core == 0.0   # no drill; RECLAUNCH_HOST_LOAD pinned
    if why_not_clean(recs[0]) is None:
        assert again.throughput_basis["kind"] == "measured"
        assert again.throughput_samples_per_second == recs[0].samples_per_s
    else:   # an unsteady rate on a busy machine: beside the model, not instead of it
        assert again.throughput_basis["measured_runs"]["runs"] == 1
    print(f"e2e wall {time.monotonic() - t0:.1f}s")
    provider.down("e2e", yes=True)
    assert not (home / "local" / "e2e").exists()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("node,workers", [(1, 1), (0, 0)])
def test_spot_reclaim_drill_resumes_from_checkpoint(home, provider, node, workers, helpers):
    """The drill signals as the kubelet does (the node's torchrun only, then KILL): with
    DataLoader workers too, as every GPU plan has them, the SIGTERM checkpoint lands."""
    sys.path.insert(0, str(helpers.REPO / "examples" / "trainer"))
    import dcp_ckpt

    spec = helpers.make_spec("drill", args=["--model", "deepfm", "--steps", "240", "--log-every", "10",
                                            "--num-workers", str(workers)],
                             every_minutes=0.1)
    provider.up(helpers.local_plan(spec), UpOptions(detach=True), cwd=str(helpers.REPO))
    wait_for(lambda: (provider.status("drill").details["progress"].get("step") or 0) >= 40, 150,
             "step 40")
    rec = provider.preempt("drill", node, notice=10, replace_after=2)
    assert rec["status"] in ("killed", "replaced")
    st = wait_for(lambda: (s := provider.status("drill")).state in lp.TERMINAL and s, 240, "the job to end")
    assert st.state == "Succeeded", st.message
    prog = st.details["progress"]
    assert prog["done"]["step"] == 240, prog["done"]            # every step
    assert prog["resumed_from"], "no restart resumed from a checkpoint"
    if prog["sigterms"]:
        # The dying torchrun agent relays its worker's last lines on a best-effort basis, so
        # the "sigterm" line can be lost under load; the checkpoint itself cannot.
        before = [c for c in prog["checkpoints"] if c <= prog["sigterms"][0]]
        assert prog["resumed_from"][0] == max(before)           # nothing after the last checkpoint lost
    # The SIGTERM checkpoint was written at or after the notice: no work before it was lost.
    assert prog["resumed_from"][0] >= rec["step_at_notice"]
    assert st.pods[node]["restarts"] == 1                       # the node was replaced once
    ckpt_dir = Path((lp.read_json(home / "local" / "drill" / "launch.json"))["env"]["CHECKPOINT_DIR"])
    entries = sorted(ckpt_dir.iterdir())
    assert entries and not [f for f in entries if ".tmp" in f.name]
    saved = dcp_ckpt.list_checkpoints(str(ckpt_dir))             # sharded (DCP) step-N/ directories
    assert saved and len(saved) == len(entries)
    for step, path in saved:                                    # never torn: every rank's shard file complete
        meta = dcp_ckpt.verify(path)
        assert meta["step"] == step > 0 and meta["world_size"] in (1, 2)
        assert len([n for n in meta["files"] if n.endswith(".distcp")]) == meta["world_size"]
    assert_nothing_left("drill", st.details["port"])
    # the run's record says it was reclaimed: the next plan does not take its rate alone
    from reclaunch.planner import make_plan
    from reclaunch.runtime.measurements import load_all, plan_context
    recs, _ = load_all()
    assert len(recs) == 1 and recs[0].reclaims == 1
    again = make_plan(spec, context=plan_context(spec))
    assert again.throughput_basis["kind"] == "model"
    assert "reclaim" in again.throughput_basis["measured_runs"]["excluded"][0]
    provider.down("drill", yes=True)


@pytest.mark.timeout(120)
def test_failing_command_reports_the_ranks_last_lines(home, provider, helpers):
    cmd = ["python", "-c", "import os,sys; print('loading shard 7 on rank', os.environ['RANK']); "
           "print('ValueError: bad shard header', flush=True); sys.exit(1)"]
    spec = helpers.make_spec("boom", command=cmd, args=[], max_restarts=0)
    st = provider.up(helpers.local_plan(spec), cwd=str(helpers.REPO), console=_quiet())
    assert st.state == "Failed"
    assert "ValueError: bad shard header" in st.message
    assert st.details["failure"]["rank"] in (0, 1)
    assert_nothing_left("boom", st.details["port"])
    provider.down("boom", yes=True)


@pytest.mark.timeout(120)
def test_port_in_use_second_up_and_down(home, provider, helpers):
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    taken = busy.getsockname()[1]
    try:
        cmd = ["python", "-c", "import time; time.sleep(120)"]
        spec = helpers.make_spec("busy", command=cmd, args=[], teardown="never")
        st = provider.up(helpers.local_plan(spec), UpOptions(detach=True), port=taken, cwd=str(helpers.REPO))
        port = st.details["port"]
        assert port and port != taken
        assert "in use" in provider.status("busy").message
        with pytest.raises(ProviderError, match="already up"):
            provider.up(helpers.local_plan(spec), UpOptions(detach=True), cwd=str(helpers.REPO))
        wait_for(lambda: len(lp.run_pids("busy")) >= 5, 60, "supervisor, 2 agents and 2 workers")
        assert not lp.port_free(port)
        provider.down("busy", yes=True)
        assert lp.run_pids("busy") == [] and lp.port_free(port)
        assert not (home / "local" / "busy").exists()
    finally:
        busy.close()


def test_down_or_status_of_an_unknown_cluster_is_a_usage_error(home, provider, helpers):
    with pytest.raises(UsageError, match="no local cluster named 'nope'") as exc:
        provider.down("nope", yes=True)
    assert exc.value.exit_code == 2
    with pytest.raises(UsageError):
        provider.status("nope")
    with pytest.raises(UsageError):
        provider.preempt("nope", 1)


def _quiet():
    from rich.console import Console

    return Console(file=io.StringIO())


@pytest.mark.timeout(120)
def test_failed_job_kept_for_debugging_goes_after_idle_minutes(home, provider, helpers):
    cmd = ["python", "-c", "import sys; print('boom', flush=True); sys.exit(1)"]
    spec = helpers.make_spec("idle", command=cmd, args=[], max_restarts=0, teardown="on_success")
    spec.teardown.idle_minutes = 0.05          # 3 s; the spec itself asks for >= 1 minute
    st = provider.up(helpers.local_plan(spec), UpOptions(detach=True), cwd=str(helpers.REPO))
    st = wait_for(lambda: (s := provider.status("idle")).state in lp.TERMINAL and s, 60, "the job to fail")
    assert st.state == "Failed"
    state = wait_for(lambda: (j := lp.read_json(home / "local" / "idle" / "state.json")).get("torn_down") and j,
                     60, "the idle guard")
    assert "teardown.idle_minutes" in state["message"]
    assert_nothing_left("idle", st.details["port"])
    provider.down("idle", yes=True)
