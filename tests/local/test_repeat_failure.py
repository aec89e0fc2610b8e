"""Issue 25: a failure that is the same on every restart stops after the second attempt."""

from __future__ import annotations

import io

import pytest

from reclaunch.providers.local import proc as lp
from reclaunch.providers.local.repeat import RepeatWatch

AGENT = ("E1201 09:20:47.993000 20484 torch/distributed/elastic/multiprocessing/api.py:1002] "
         "failed (exitcode: 1) local_rank: 0 (pid: {pid}) of binary: python")


def attempt(w: RepeatWatch, node: int, text: str, pid: int, rank: int = 0) -> None:
    w.feed(node, f"[rank{rank}]: step=10 loss=0.5\n")
    w.feed(node, f"[rank{rank}]: {text}\n")
    w.feed(node, AGENT.format(pid=pid))


def test_two_identical_attempts_are_a_repeat_and_one_is_not() -> None:
    w = RepeatWatch()
    attempt(w, 0, "error: din needs a behaviour-sequence table", 1)
    assert w.repeated() is None
    attempt(w, 0, "error: din needs a behaviour-sequence table", 2, rank=1)   # ranks move
    assert "same failure on two attempts in a row (node 0): error: din needs" in w.repeated()


def test_different_failures_and_reclaims_are_not_repeats() -> None:
    w = RepeatWatch()
    attempt(w, 0, "RuntimeError: Connection reset by peer", 1)
    attempt(w, 0, "ValueError: bad shard header", 2)
    assert w.repeated() is None
    w.reclaimed()            # a drill: the peer's failure next is the drill's doing
    attempt(w, 0, "ValueError: bad shard header", 3)
    assert w.repeated() is None


def test_workers_of_one_attempt_count_once() -> None:
    w = RepeatWatch()
    w.feed(0, "[rank0]: error: bad\n")
    w.feed(0, "[rank1]: error: bad\n")
    w.feed(0, AGENT.format(pid=1))
    w.feed(0, AGENT.format(pid=2).replace("local_rank: 0", "local_rank: 1"))
    assert w.repeated() is None and len(w.attempts[0]) == 1


def _quiet():
    from rich.console import Console
    return Console(file=io.StringIO())


@pytest.mark.timeout(240)
def test_a_config_error_stops_after_two_attempts(home, provider, helpers, capsys):
    # a second to fail, as a trainer takes to import torch and read its config
    cmd = ["python", "-c", "import sys, time; time.sleep(1); print('error: --foo is not a known option', flush=True); sys.exit(2)"]
    spec = helpers.make_spec("cfg", command=cmd, args=[], nodes=1, min_nodes=1, max_nodes=1,
                             max_restarts=6)
    st = provider.up(helpers.local_plan(spec), cwd=str(helpers.REPO), console=_quiet())
    assert st.state == "Failed"
    assert "same failure on two attempts in a row" in st.message
    assert "error: --foo is not a known option" in st.message
    assert st.details["failure"]["repeated"] is True
    log = lp.node_log(home / "local" / "cfg", 0).read_text()
    # 2 attempts ended (a third may have started while stopping), never the 7 max_restarts allows
    assert 2 <= log.count("failed (exitcode") <= 3, log
    # `diagnose` on the failed job shows its error, not "wait for the first interval"
    from reclaunch.runtime.observe import NoMetrics, diagnose_cluster

    with pytest.raises(NoMetrics) as info:
        diagnose_cluster("cfg", provider)
    text = str(info.value)
    assert "cfg failed before reporting metrics" in text and "--foo is not a known option" in text
    assert "first interval" not in text
    capsys.readouterr()
    provider.down("cfg", yes=True)
    said = capsys.readouterr().out      # `down` says what it stopped and deleted
    assert "cfg: no process left" in said and "deleted" in said and str(home / "local" / "cfg") in said


def test_the_same_first_failure_on_every_rank_stops_at_once() -> None:
    # issue 42: an unknown trainer flag fails every rank alike; one attempt is proof enough
    w = RepeatWatch(world=2)
    attempt(w, 0, "train.py: error: unrecognized arguments: --foo", 1, rank=0)
    assert w.repeated() is None                    # one rank of two: maybe its node
    attempt(w, 1, "train.py: error: unrecognized arguments: --foo", 2, rank=1)
    why = w.repeated()
    assert why and "every rank (2 of 2) failed the same way on its first attempt" in why
    assert "unrecognized arguments: --foo" in why


def test_every_rank_but_different_lines_or_one_rank_alone_is_no_proof() -> None:
    w = RepeatWatch(world=2)
    attempt(w, 0, "ValueError: bad shard header", 1, rank=0)
    attempt(w, 1, "RuntimeError: Connection closed by peer", 2, rank=1)   # the peer's doing
    assert w.repeated() is None
    solo = RepeatWatch(world=1)                     # one process: a single failure may be chance
    attempt(solo, 0, "error: --foo", 1)
    assert solo.repeated() is None
    w2 = RepeatWatch(world=2)
    attempt(w2, 0, "error: --foo", 1, rank=0)
    w2.reclaimed()                                  # a drill between them: start counting again
    attempt(w2, 1, "error: --foo", 2, rank=1)
    assert w2.repeated() is None


@pytest.mark.timeout(240)
def test_an_unknown_flag_on_two_nodes_stops_after_the_first_attempt(home, provider, helpers):
    cmd = ["python", "-c", "import sys, time; time.sleep(1); "
           "print('train.py: error: unrecognized arguments: --foo', flush=True); sys.exit(2)"]
    spec = helpers.make_spec("flag", command=cmd, args=[], nodes=2, min_nodes=2, max_nodes=2,
                             max_restarts=6)
    st = provider.up(helpers.local_plan(spec), cwd=str(helpers.REPO), console=_quiet())
    assert st.state == "Failed"
    assert "every rank (2 of 2) failed the same way on its first attempt" in st.message, st.message
    assert "unrecognized arguments: --foo" in st.message
    # decided on the first attempt; torchrun may start another while its agent is being
    # stopped (SIGTERM, grace, SIGKILL), as in the single-node test above: never the 7 allowed
    for node in (0, 1):
        log = lp.node_log(home / "local" / "flag", node).read_text()
        assert 1 <= log.count("failed (exitcode") <= 3, log
    provider.down("flag", yes=True)
