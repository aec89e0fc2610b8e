"""Issue 41 item 12: `calibrate --trainer RELATIVE_PATH` names the file from where the user
stands (the runs themselves start in a temporary directory)."""

from __future__ import annotations

from pathlib import Path

from reclaunch.runtime import calibrate as cal
from tests.cli.test_calibrate_cli import fake_runner

ROOT = Path(__file__).resolve().parents[2]


def test_a_relative_trainer_is_resolved_before_the_runs(monkeypatch, tmp_path):
    got: list[Path] = []

    def runner(doc, trainer):
        got.append(trainer)
        return fake_runner(doc, trainer)

    monkeypatch.setattr(cal, "run_reference", runner)
    monkeypatch.chdir(ROOT / "examples")
    from reclaunch.cli import main
    try:
        main(["calibrate", "--trainer", "trainer/train.py", "--repeats", "1", "--json"])
    except SystemExit as exc:
        assert not exc.code, exc
    assert got and all(t.is_absolute() and t == ROOT / "examples" / "trainer" / "train.py" for t in got)
    assert cal.load_for_this_host()[0].trainer == str(ROOT / "examples" / "trainer" / "train.py")
