"""Issue 26 on cloud: local: what a job prints, and damaged state files, never take down the
supervisor, the `up` watcher or `status`; a bad one is skipped (and counted) or named."""

from __future__ import annotations

import errno
import io
import json
import os
import random
import stat
import time
from pathlib import Path

import pytest

from reclaunch.errors import ProviderError, UsageError
from reclaunch.providers.local import proc as lp

HOSTILE = [
    "step=10 loss=0.5 samples_per_s=1.2.3",
    "step=10 loss=0.5 samples_per_s=" + "9" * 400,
    "step=" + "9" * 400 + " loss=0.5 samples_per_s=10",
    "step=" + "9" * 5000 + " loss=0.5 samples_per_s=10",
    "done steps=3 final_loss=nan samples_per_s=1e999",
    "done steps=3 final_loss=x samples_per_s=-5",
    "info model=x start_step=" + "1" * 30 + " steps=2",
    "info checkpoint step=" + "7" * 100,
    "step=1 loss=[/bogus] samples_per_s=[link=http://evil]x[/link]",
    "\x1b]0;pwned\x07step=1 loss=\x1b[31m samples_per_s=\x00",
    "step=1 loss=0.1 samples_per_s=1" + "0" * 70_000,
    "",
]


def _rand_lines(n: int, seed: int = 26) -> list[str]:
    rnd = random.Random(seed)
    alphabet = "step=loss samples_per_s done final info 0123456789.eE+-nan[]/\x1b\x00 "
    return ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 120))) for _ in range(n)]


@pytest.mark.parametrize("text", HOSTILE)
def test_parse_line_never_raises_and_rejects_garbage(text):
    ev = lp.parse_line(text)
    assert ev is None or (ev["kind"] in ("step", "done") and 0 <= ev["samples_per_s"] <= lp.MAX_RATE)


def test_parse_line_fuzz_and_good_lines_still_parse():
    for line in _rand_lines(2000):
        lp.parse_line(line)   # never raises
    assert lp.parse_line("step=20 loss=0.6931 samples_per_s=1234.5") == {
        "kind": "step", "step": 20, "loss": 0.6931, "samples_per_s": 1234.5}
    assert lp.parse_line("step=20 loss=0.6931 samples_per_s=1.2.3") is None


def _supervisor(home: Path, name: str = "hostile"):
    from reclaunch.providers.local.supervisor import Supervisor

    root = home / "local" / name
    root.mkdir(parents=True)
    lp.write_json(root / "launch.json", {"name": name, "run_id": "r1", "teardown": "never",
                                         "nodes": 1, "env": {}})
    return Supervisor(root)


def test_the_supervisor_survives_any_line_and_counts_the_bad_ones(home):
    sup = _supervisor(home)
    path = lp.node_log(sup.root, 0)
    for text in HOSTILE + _rand_lines(300):
        sup.on_line(path, "[rank0]: " + text)
    sup.on_line(path, "[rank0]: step=40 loss=0.5 samples_per_s=100")
    assert sup.progress["step"] == 40 and sup.progress["samples_per_s"] == 100.0
    assert sup.progress["bad_lines"] >= 8
    sup.write(force=True)   # and state.json still writes (JSON-safe progress)
    assert json.loads((sup.root / "state.json").read_text())["progress"]["step"] == 40


def test_tail_is_bounded_for_a_job_writing_without_newlines(tmp_path):
    log = tmp_path / "node-0.log"
    log.write_bytes(b"x" * (3 * lp.MAX_LINE) + b"\nstep=1 loss=0.1 samples_per_s=5\n" + b"y" * 100)
    tail = lp.Tail([log])
    got = []
    while batch := tail.read():
        got += [ln for _, ln in batch]
    assert len(got) == 2 and len(got[0]) < lp.MAX_LINE + 100 and "line cut" in got[0]
    assert got[1].startswith("step=1")
    assert sum(len(v) for v in tail._partial.values()) <= lp.MAX_LINE
    # the tail of a long file only, from a whole line
    recent = lp.Tail([log], tail_bytes=120)
    assert [ln for _, ln in recent.read()] == []   # the cut first line is dropped, "y" waits


def test_a_fifo_or_dev_zero_as_a_log_or_state_file_neither_hangs_nor_fills_memory(tmp_path):
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.log"
    zero.symlink_to("/dev/zero")
    t0 = time.monotonic()
    assert lp.Tail([fifo, zero]).read() == []
    assert lp.read_json_why(fifo) == (None, "not a regular file")
    assert lp.read_json_why(zero)[0] is None
    assert time.monotonic() - t0 < 5


def _state(home: Path, name: str, **over) -> Path:
    root = home / "local" / name
    root.mkdir(parents=True, exist_ok=True)
    doc = {"name": name, "run_id": "r1", "state": "Running", "nodes": [], "message": ""}
    doc.update(over)
    (root / "state.json").write_text(json.dumps(doc))
    return root


@pytest.mark.parametrize("damage,needle", [
    ({"started_at": 1e308}, "started_at"), ({"finished_at": 1e300}, "finished_at"),
    ({"port": -1}, "port")])
def test_absurd_numbers_in_state_are_named(home, provider, damage, needle):
    root = _state(home, "odd", **damage)
    st = provider.status("odd")
    assert st.state == "Unknown" and needle in st.message and str(root / "state.json") in st.message


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_state_json_that_is_no_file_is_named_without_hanging(home, provider, kind):
    root = home / "local" / "weird"
    root.mkdir(parents=True)
    p = root / "state.json"
    {"fifo": lambda: os.mkfifo(p), "dev-zero": lambda: p.symlink_to("/dev/zero"),
     "directory": lambda: p.mkdir()}[kind]()
    t0 = time.monotonic()
    st = provider.status("weird")
    assert st.state == "Unknown" and "not a regular file" in st.message
    assert time.monotonic() - t0 < 5


def test_damaged_launch_json_is_named_by_logs_rank(home, provider):
    root = _state(home, "abc")
    (root / "launch.json").write_text(json.dumps({"name": "abc", "max_nodes": "abc", "nproc": 1}))
    with pytest.raises(ProviderError, match=r"launch.json is damaged: max_nodes"):
        list(provider.logs("abc", rank=0))


def test_markup_and_escapes_from_a_job_reach_no_terminal(home, provider):
    from rich.console import Console

    from reclaunch.ui.status import status_table

    evil = "[/bogus] [link=http://evil.example]click[/link] \x1b]0;owned\x07 \x1b[31mred \u202egnp.exe"
    _state(home, "evil", state="Failed", message=evil, supervisor_pid=None,
           failure={"last_lines": [evil]})
    good = _state(home, "good", state="Succeeded", started_at=1.0, finished_at=2.0)
    assert good
    rows = [provider.status("evil"), provider.status("good")]
    buf = io.StringIO()
    Console(file=buf, force_terminal=True, width=400).print(status_table(rows))
    out = buf.getvalue()
    assert "\x1b]0;" not in out and "\x1b]8;" not in out and "\u202e" not in out
    assert "[/bogus]" in out and "\\x1b]0;owned" in out and "good" in out


def test_early_kill_says_what_not_no_cluster_named_it(home, provider):
    root = home / "local" / "k9"
    root.mkdir(parents=True)
    lp.write_json(root / "launch.json", {"name": "k9", "run_id": "dead0001"})
    st = provider.status("k9")
    assert st.state == "Failed" and "never wrote its state" in st.message
    with pytest.raises(UsageError) as e:
        provider.status("k8")
    assert "known: k9" in str(e.value) and "k8" not in str(e.value).split("known:")[1]


def test_a_full_disk_is_said_and_the_supervisor_goes_on(home, monkeypatch, capsys):
    sup = _supervisor(home, "full")

    def full(path, obj):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))
    monkeypatch.setattr(lp, "write_json", full)
    sup.write(force=True)   # no exception: the cluster lives on
    sup.write(force=True)
    err = capsys.readouterr().err
    assert err.count("no space left on") == 1 and "kept: logs and checkpoints" in err
    assert sup.disk_full and str(sup.root) in sup.disk_full


def test_supervisor_main_says_no_space_and_what_was_kept(home, monkeypatch, capsys):
    from reclaunch.providers.local import supervisor

    _supervisor(home, "full2")

    def boom(self):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(supervisor.Supervisor, "run", boom)
    assert supervisor.main([str(home / "local" / "full2")]) == 1
    err = capsys.readouterr().err
    assert "no space left on" in err and "kept" in err


def test_watch_after_down_says_removed_not_kept(home, provider, tmp_path):
    from reclaunch.providers.local.watch import teardown_line

    assert "removed by `reclaunch down gone`" in teardown_line(provider, "gone", tmp_path / "nope")
    root = _state(home, "dead", supervisor_pid=None)   # died, neither torn down nor kept
    assert "supervisor is gone" in teardown_line(provider, "dead", root)


def test_tighten_makes_checkpoints_and_results_owner_only(tmp_path):
    from reclaunch.providers.local.disk import tighten

    (tmp_path / "ckpt").mkdir(mode=0o755)
    (tmp_path / "ckpt" / "step-1.pt").write_bytes(b"x")
    os.chmod(tmp_path / "ckpt" / "step-1.pt", 0o644)
    (tmp_path / "result.json").write_text("{}")
    os.chmod(tmp_path / "result.json", 0o664)
    assert tighten(tmp_path) == 3
    for p in (tmp_path / "ckpt", tmp_path / "ckpt" / "step-1.pt", tmp_path / "result.json"):
        assert not stat.S_IMODE(p.stat().st_mode) & 0o077, p


def test_recorded_procs_are_validated(home):
    from reclaunch.providers.local.teardown import recorded

    assert recorded({"procs": {"12": "boot:1", "x": "a:b", "-1": "a:1", "5": 7}}) == {12: "boot:1"}
    assert recorded({"procs": "junk"}) == {}


def test_logs_after_a_huge_line_still_come_and_status_reads_the_tail(home, provider):
    root = _state(home, "long", **{"state": "Succeeded"})
    lp.write_json(root / "launch.json", {"name": "long", "run_id": "r1", "nodes": 1,
                                         "max_nodes": 1, "nproc": 1})
    (root / "nodes").mkdir()
    with open(root / "nodes" / "node-0.log", "w") as f:
        f.write("z" * (3 * lp.MAX_READ) + "\n")          # a line bigger than one read
        f.writelines(f"[rank0]: line {i}\n" for i in range(1000))
    lines = list(provider.logs("long", rank=0))
    assert len(lines) == 1000 and lines[-1] == "[rank0]: line 999"
    recent = list(provider.recent_logs("long", rank=0, max_bytes=200))
    assert 0 < len(recent) < 20 and recent[-1] == "[rank0]: line 999"
