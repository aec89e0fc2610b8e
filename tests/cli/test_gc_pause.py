"""The collector is paused only for the one-shot verbs, and always given back
(reclaunch/__main__.py, the console script's entry)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

import reclaunch.cli
from reclaunch.__main__ import ONE_SHOT, main

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "aws-deepfm-p4d.yaml")


@pytest.mark.parametrize("argv, paused", [(["plan", "f.yaml"], True), (["validate", "a"], True),
                                          (["render", "f", "--out", "d"], True),
                                          (["up", "f.yaml"], False), (["logs", "n", "-f"], False),
                                          (["--help"], False), ([], False)])
def test_collector_paused_only_for_one_shot_verbs_and_restored(monkeypatch, argv, paused):
    seen = []
    monkeypatch.setattr(reclaunch.cli, "main", lambda a=None: seen.append(gc.isenabled()))
    assert gc.isenabled()
    main(argv)
    assert seen == [not paused]
    assert gc.isenabled()   # given back, whatever the verb


def test_collector_given_back_when_the_verb_raises(monkeypatch):
    def boom(argv=None):
        raise SystemExit(2)

    monkeypatch.setattr(reclaunch.cli, "main", boom)
    with pytest.raises(SystemExit):
        main(["plan", "x.yaml"])
    assert gc.isenabled()


def test_a_disabled_collector_stays_the_callers_choice(monkeypatch):
    monkeypatch.setattr(reclaunch.cli, "main", lambda a=None: None)
    gc.disable()
    try:
        main(["validate", "x"])
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_real_one_shot_verb_runs_and_gives_the_collector_back(capsys):
    with pytest.raises(SystemExit) as ended:
        main(["validate", EXAMPLE])
    assert ended.value.code == 0 and ": ok (" in capsys.readouterr().out
    assert gc.isenabled()


def test_one_shot_verbs_are_real_verbs():
    assert ONE_SHOT <= set(reclaunch.cli.cli.commands)


def test_console_script_starts_here():
    text = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert 'reclaunch = "reclaunch.__main__:main"' in text


@pytest.fixture
def unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()   # this test process keeps collecting what earlier tests made


def test_the_process_command_line_freezes_the_start_up_for_the_exit(monkeypatch, unfrozen):
    # main() without argv is the console script: it exits next, and the interpreter's exit
    # collections would sweep every start-up object again for nothing.
    monkeypatch.setattr(reclaunch.cli, "main", lambda a=None: None)
    monkeypatch.setattr("sys.argv", ["reclaunch", "plan", "f.yaml"])
    main()
    assert gc.get_freeze_count() > 0 and gc.isenabled()


@pytest.mark.parametrize("argv, line", [(["plan", "f.yaml"], None),         # in-process caller
                                        (None, ["reclaunch", "up", "f.yaml"]),  # a long verb
                                        (None, ["reclaunch", "--help"])])
def test_nothing_is_frozen_for_in_process_callers_or_other_verbs(monkeypatch, unfrozen, argv, line):
    monkeypatch.setattr(reclaunch.cli, "main", lambda a=None: None)
    if line:
        monkeypatch.setattr("sys.argv", line)
    main(argv)
    assert gc.get_freeze_count() == 0 and gc.isenabled()


def test_the_real_exit_still_flushes_and_says_the_verdict(tmp_path):
    # The frozen exit of a real one-shot verb: its output complete, its exit code its own.
    import subprocess
    import sys

    bad = tmp_path / "bad.yaml"
    bad.write_text(Path(EXAMPLE).read_text().replace("nodes: 4", "nodes: -4", 1))
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[2]), "PATH": "/usr/bin:/bin",
           "RECLAUNCH_HOME": str(tmp_path / "home")}
    ok = subprocess.run([sys.executable, "-m", "reclaunch", "plan", "--json", EXAMPLE], env=env,
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and ok.stdout.rstrip().endswith("}") and ok.stderr == ""
    no = subprocess.run([sys.executable, "-m", "reclaunch", "validate", str(bad)], env=env,
                        capture_output=True, text=True, timeout=120)
    assert no.returncode == 2 and "nodes" in no.stderr
