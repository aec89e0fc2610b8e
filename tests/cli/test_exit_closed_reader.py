"""A reader that went away (`reclaunch validate f.yaml 2>&1 | head -1`) never turns a failure into
exit 0: scripts read validate's verdict from its exit code (`${PIPESTATUS[0]}`). The success
side stays as designed: `reclaunch catalog | head -1` is no failure of ours (exit 0, quiet).

Every run is the real CLI in a subprocess whose stdout and/or stderr is a pipe with its read end
closed before the child starts, so each write fails with EPIPE, as when `head` has exited."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_cli_robustness import AWS_EXAMPLE, ROOT, env  # noqa: F401  (fixture)

# Each replaced once in the example; the names are the fields the error lines must name.
ONE_ERROR = [("\nnodes: 4\n", "\nnodes: -1\n")]
MANY_ERRORS = ONE_ERROR + [("gpus_per_node: 8", "gpus_per_node: 0"),
                           ("batch_size: 4096", "batch_sise: 4096"),
                           ("precision: bf16", "precision: fp99"),
                           ("every_minutes: 15", "every_minutes: -3")]


def _spec(tmp_path: Path, edits) -> Path:
    text = AWS_EXAMPLE.read_text()
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    p = tmp_path / f"bad-{len(edits)}.yaml"
    p.write_text(text)
    return p


def closed(env, *args, stdout: bool = True, stderr: bool = True) -> subprocess.CompletedProcess:
    """Run `reclaunch ARGS` with the chosen streams writing into a pipe nobody reads; the others
    are captured."""
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run([sys.executable, "-m", "reclaunch", *map(str, args)],
                              env={**env, "PYTHONPATH": str(ROOT)}, cwd=ROOT, timeout=60,
                              stdout=w if stdout else subprocess.PIPE,
                              stderr=w if stderr else subprocess.PIPE, text=True)
    finally:
        os.close(w)


@pytest.fixture
def bad_specs(tmp_path) -> dict[str, Path]:
    return {"one": _spec(tmp_path, ONE_ERROR), "many": _spec(tmp_path, MANY_ERRORS)}


def test_the_bad_specs_really_are_bad(env, bad_specs):
    """The premise: with a reader, each spec fails validate with exit 2 and its error lines."""
    for kind, n in (("one", 1), ("many", 5)):
        proc = subprocess.run([sys.executable, "-m", "reclaunch", "validate", bad_specs[kind]],
                              env={**env, "PYTHONPATH": str(ROOT)}, cwd=ROOT, timeout=60,
                              capture_output=True, text=True)
        assert proc.returncode == 2, proc.stderr
        assert len(proc.stderr.splitlines()) == n, proc.stderr
        assert "nodes: must be at least 1" in proc.stderr


@pytest.mark.parametrize("verb", ["validate", "plan"])
@pytest.mark.parametrize("kind", ["one", "many"])
def test_bad_spec_exits_2_when_the_reader_went_away(env, bad_specs, verb, kind):
    """`reclaunch VERB bad.yaml 2>&1 | head -1`: the error lines cannot be written; still exit 2
    (before: validate 0, plan 1 from an unhandled BrokenPipeError)."""
    proc = closed(env, verb, bad_specs[kind])
    assert proc.returncode == 2


@pytest.mark.parametrize("verb", ["validate", "plan"])
def test_bad_spec_exits_2_when_only_stderr_lost_its_reader(env, bad_specs, verb):
    proc = closed(env, verb, bad_specs["many"], stdout=False)
    assert proc.returncode == 2
    assert proc.stdout == ""


@pytest.mark.parametrize("verb", ["validate", "plan"])
def test_bad_spec_with_stdout_gone_reports_on_stderr(env, bad_specs, verb):
    """`reclaunch VERB bad.yaml | head -1`: stderr still has the reader, the lines all arrive."""
    proc = closed(env, verb, bad_specs["many"], stderr=False)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.splitlines()) == 5, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr


def test_validate_verdict_covers_every_file_after_the_reader_went(env, bad_specs):
    """The valid file's ok line hits EPIPE first; the bad file after it still decides exit 2."""
    assert closed(env, "validate", AWS_EXAMPLE, bad_specs["one"]).returncode == 2
    assert closed(env, "validate", AWS_EXAMPLE, AWS_EXAMPLE).returncode == 0


@pytest.mark.parametrize("args", [["validate", AWS_EXAMPLE], ["catalog"],
                                  ["plan", AWS_EXAMPLE]])
def test_success_stays_0_when_the_reader_went_away(env, args):
    assert closed(env, *args).returncode == 0
    proc = closed(env, *args, stderr=False)   # `| head -0`: nothing about it on stderr
    assert (proc.returncode, proc.stderr) == (0, "")


@pytest.mark.parametrize("args, code", [
    (["plan", "--no-such-option"], 2),      # click's usage error, our one line
    (["validate", "/no/such/file.yaml"], 2),
    ([], 2),                                # bare `reclaunch`: the help on stderr
    (["status"], 1),                        # a runtime failure (RECLAUNCH_HOME is a file)
])
def test_other_failures_keep_their_code_when_the_reader_went_away(env, tmp_path, args, code):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    env["RECLAUNCH_HOME"] = str(a_file)
    assert closed(env, *args).returncode == code
    proc = closed(env, *args, stdout=False)
    assert (proc.returncode, proc.stdout) == (code, "")


# An item table the example's cluster (4 x p4d.24xlarge) cannot hold: `plan` prints the plan, then
# exits 1. 5e9 rows, not more: --compare's time grows with the rows (5e11: ~100 s, 2026-12-01).
TOO_BIG = [("{name: item_id, rows: 5e6}", "{name: item_id, rows: 5e9}")]


@pytest.mark.parametrize("extra", [[], ["--json"], ["--compare"]])
def test_plan_verdict_after_printing_survives_a_reader_gone(env, tmp_path, extra):
    """`reclaunch plan big.yaml | head -0`: the plan cannot be written, yet the exit code is the
    one a reader sees (1: it does not fit), not `| head -1` success (before: 0)."""
    big = _spec(tmp_path, TOO_BIG)
    seen = subprocess.run([sys.executable, "-m", "reclaunch", "plan", big, *extra],
                          env={**env, "PYTHONPATH": str(ROOT)}, cwd=ROOT, timeout=60,
                          capture_output=True, text=True)
    assert seen.returncode == 1 and seen.stdout and seen.stderr == "", seen.stderr
    gone = closed(env, "plan", big, *extra, stderr=False)
    assert (gone.returncode, gone.stderr) == (seen.returncode, "")
    assert closed(env, "plan", big, *extra).returncode == seen.returncode   # `2>&1 | head -0`


@pytest.mark.parametrize("extra", [["--json"], ["--compare"]])
def test_fitting_plan_stays_0_when_the_reader_went_away(env, extra):
    proc = closed(env, "plan", AWS_EXAMPLE, *extra, stderr=False)
    assert (proc.returncode, proc.stderr) == (0, "")
