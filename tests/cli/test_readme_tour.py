"""Issue 42: the README's first hour and its tour, walked in order from a fresh
$RECLAUNCH_HOME, every command checked against what the README says beside it.

The commands are read from README.md itself (and `make demo`'s from the Makefile), so the
README cannot drift from what runs: a line this test has no expectation for fails it. Bounded:
the repository's examples are copied with the local job at 600 steps, `make demo`'s
calibration runs once per batch size (`--repeats 1`), every command has a timeout, and nothing
leaves 127.0.0.1 (the [aws] lines that need a cloud run only where they stop before reaching it:
no Pulumi CLI, no credentials, AWS_ENDPOINT_URL at a closed local port).
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STEPS = 600        # long enough for the drill to land on a job still training


def _block(title: str) -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index(f"## {title}"):]
    section = section[:section.index("\n## ", 4)]
    body = section[section.index("```bash\n") + 8:]
    return [ln for ln in body[:body.index("```")].splitlines() if ln.strip()]


def _commands(line: str) -> tuple[list[list[str]], str]:
    """A README line -> (its commands, its comment)."""
    parts = re.split(r"\s+#\s", line.strip(), maxsplit=1)
    code, comment = parts[0], parts[1] if len(parts) > 1 else ""
    return [shlex.split(c) for c in re.split(r"\s*(?:;|&&)\s*", code) if c.strip()], comment


def _demo() -> list[list[str]]:
    """`make demo`'s reclaunch commands (the Makefile's recipe)."""
    text = (ROOT / "Makefile").read_text()
    recipe = text[text.index("\ndemo:"):].split("\n\n")[0].splitlines()[1:]
    return [shlex.split(ln.strip().replace("$(BIN)/reclaunch", "reclaunch"))
            for ln in recipe if ln.strip().startswith("$(BIN)/reclaunch")]


# What each command must do: (argv prefix, exit code, fragments of its output). The local job
# is `local-deepfm` (examples/local-deepfm.yaml); the cloud examples are planned offline.
EXPECT: list[tuple[list[str], int, list[str]]] = [
    (["calibrate", "--if-needed"], 0, ["calibrat"]),
    (["up", "examples/local-deepfm.yaml", "--yes"], 0, ["local-deepfm: Succeeded"]),
    (["check"], 0, ["credentials aws"]),
    (["validate", "mine.yaml"], 0, ["mine.yaml: ok (local-deepfm: local"]),
    (["plan", "mine.yaml"], 0, ["plan: local-deepfm", "cost         none"]),
    (["up", "mine.yaml", "--dry-run"], 0, ["nothing created", "torchrun agent"]),
    (["validate", "examples/*.yaml"], 0, ["aws-deepfm-p4d.yaml: ok", "local-deepfm.yaml: ok"]),
    (["plan", "examples/aws-deepfm-p4d.yaml"], 0, ["per table", "samples/s", "cost spot",
                                                   "what needs a person"]),
    (["plan", "examples/gcp-dcnv2-a3mega.yaml", "--compare"], 0, ["recommendation:"]),
    (["render", "examples/aws-deepfm-p4d.yaml", "--out", "manifests/"], 0, ["wrote"]),
    (["preview", "examples/aws-deepfm-p4d.yaml"], 0, ["Pulumi program under mocks"]),
    (["up", "examples/aws-deepfm-p4d.yaml", "--dry-run"], 0, ["nothing created",
                                                              "PyTorchJob"]),
    (["check", "examples/aws-deepfm-p4d.yaml"], 1, ["would stop"]),
    (["up", "examples/local-deepfm.yaml", "--detach"], 0, ["started local-deepfm"]),
    (["status"], 0, ["local-deepfm"]),
    (["preempt", "local-deepfm", "--node", "1"], 0, ["node 1 of local-deepfm reclaimed"]),
    (["exec", "local-deepfm", "--rank", "1", "--", "printenv", "RANK", "WORLD_SIZE"], 0, ["1\n2\n"]),
    (["logs", "local-deepfm", "-f"], 0, [f"done steps={STEPS}"]),
    (["diagnose", "local-deepfm"], 0, ["measured vs planned", "interrupted"]),
    (["down", "local-deepfm", "--yes"], 0, ["local-deepfm"]),
    (["up", "examples/aws-deepfm-p4d.yaml"], 1, ["Pulumi CLI not found"]),
    (["gc", "--cloud", "aws", "--region", "us-east-1"], 1, ["credentials"]),
]
# [aws] lines about the cluster the real `up` would have made: nothing to run them against.
AFTER_REAL_UP = (["status"], ["logs", "criteo-deepfm"], ["diagnose", "criteo-deepfm"],
                 ["down", "criteo-deepfm"])


def _expectation(argv: list[str]) -> tuple[int, list[str]]:
    for command, code, fragments in EXPECT:
        if argv == command:
            return code, fragments
    raise AssertionError(f"README command without an expectation in this test: {argv}")


@pytest.mark.timeout(2400)
def test_the_readme_tour_works_as_written_in_order(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("torchrec")
    repo = tmp_path / "reclaunch"
    repo.mkdir()
    shutil.copytree(ROOT / "examples", repo / "examples",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for f in ("pyproject.toml", "Makefile"):
        shutil.copy(ROOT / f, repo / f)
    local = repo / "examples" / "local-deepfm.yaml"
    text = local.read_text()
    assert '--steps, "300"' in text and "samples: 153600" in text
    local.write_text(text.replace('--steps, "300"', f'--steps, "{STEPS}"')
                     .replace("samples: 153600", f"samples: {STEPS * 512}"))
    env = {**os.environ, "RECLAUNCH_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT),
           "COLUMNS": "120", "KUBECONFIG": str(tmp_path / "no-kubeconfig"),
           "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_CONFIG_FILE": str(tmp_path / "none"),
           "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"), "AWS_EC2_METADATA_DISABLED": "true"}
    ran: list[str] = []

    def reclaunch(argv: list[str], timeout: float = 900) -> str:
        code, fragments = _expectation(argv)
        args = [a for x in argv for a in (sorted(glob.glob(x, root_dir=repo)) if "*" in x else [x])]
        if args[:2] == ["calibrate", "--if-needed"]:
            args += ["--repeats", "1"]          # bounded: one run per batch size
        res = subprocess.run([sys.executable, "-m", "reclaunch", *args], cwd=repo, env=env,
                             capture_output=True, text=True, timeout=timeout,
                             stdin=subprocess.DEVNULL)
        out = res.stdout + res.stderr
        assert res.returncode == code, f"`reclaunch {shlex.join(argv)}` exited {res.returncode}:\n{out[-3000:]}"
        for frag in fragments:
            assert frag in out, f"`reclaunch {shlex.join(argv)}`: no {frag!r} in:\n{out[-3000:]}"
        assert "already finished" not in out, out[-2000:]
        ran.append(shlex.join(argv))
        return out

    def wait_until_training() -> None:
        """The drill is against a running job: wait (bounded) for its first reported step."""
        end = time.monotonic() + 300
        while time.monotonic() < end:
            res = subprocess.run([sys.executable, "-m", "reclaunch", "status", "local-deepfm",
                                  "--json"], cwd=repo, env=env, capture_output=True, text=True,
                                 timeout=60)
            st = json.loads(res.stdout or "{}")
            if (st.get("details") or {}).get("progress", {}).get("step"):
                return
            assert st.get("state") not in ("Succeeded", "Failed"), st
            time.sleep(1)
        raise AssertionError("the local job reported no step within 300 s")

    aws_cluster = False
    for line in _block("A new user's first hour") + _block("A tour"):
        commands, comment = _commands(line)
        for argv in commands:
            if argv[:2] == ["git", "clone"] or argv[0] in ("cd", "source"):
                continue
            if argv == ["make", "demo"]:
                for demo in _demo():
                    reclaunch(demo[1:])
                continue
            if argv[0] == "cp":
                shutil.copy(repo / argv[1], repo / argv[2])
                continue
            assert argv[0] == "reclaunch", line
            argv = argv[1:]
            if "[aws]" in comment:
                if argv[:2] == ["up", "examples/aws-deepfm-p4d.yaml"] and len(argv) == 2:
                    if shutil.which("pulumi"):
                        continue                 # it would reach for a cloud: not from a test
                    aws_cluster = True           # what follows is about the cluster it makes
                elif aws_cluster and any(argv[:len(p)] == list(p) for p in AFTER_REAL_UP):
                    continue
            if argv[:1] == ["exec"]:
                wait_until_training()
            reclaunch(argv)
    assert (repo / "manifests").is_dir() and any("pytorchjob" in f.name
                                                  for f in (repo / "manifests").iterdir())
    for must in ("up examples/local-deepfm.yaml --detach", "preempt local-deepfm --node 1",
                 "diagnose local-deepfm", "validate mine.yaml"):
        assert must in ran, ran
