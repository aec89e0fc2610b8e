"""Issue 15 through the real CLI: two terminals, a reused name, a lost journal, a damaged
state file, a redacted backend, Ctrl-C. Real `python -m reclaunch` processes and real local
clusters (a sleeping job), each bounded in time and stopped by the test."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOCAL = (ROOT / "examples" / "local-deepfm.yaml").read_text()
AWS = (ROOT / "examples" / "aws-deepfm-p4d.yaml").read_text()


@pytest.fixture
def env(tmp_path, monkeypatch) -> dict[str, str]:
    home = tmp_path / "rl-home"
    monkeypatch.setenv("RECLAUNCH_HOME", str(home))   # this process too (locks, cleanup)
    e = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "AZURE_", "GOOGLE_"))}
    e.update(RECLAUNCH_HOME=str(home), COLUMNS="200", AWS_EC2_METADATA_DISABLED="true")
    yield e
    from reclaunch.providers.local import proc as lp   # nothing of ours may outlive a test
    for d in (home / "local").glob("*"):
        lp.kill_marked(lp.MARKER, lp.run_marker(d.name), 2.0)


def run(env, *args, timeout: float = 90, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run([sys.executable, "-m", "reclaunch", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT, **kw)


def sleeper(tmp_path: Path, name: str) -> Path:
    """A local spec whose job sleeps (one node, kept up until `down`)."""
    text = (LOCAL.replace("name: local-deepfm", f"name: {name}")
            .replace("nodes: 2\n", "nodes: 1\n", 1).replace("max_nodes: 2", "max_nodes: 1")
            .replace("command: [python, examples/trainer/train.py]",
                     "command: [python, -c, 'import time; time.sleep(150)']")
            .replace("when: on_completion", "when: never"))
    p = tmp_path / f"{name}.yaml"
    p.write_text(text)
    return p


def supervisors(name: str) -> list[int]:
    from reclaunch.providers.local import proc as lp
    return [p for p in lp.run_pids(name)
            if b"reclaunch.providers.local.supervisor" in Path(f"/proc/{p}/cmdline").read_bytes()]


def one_error_line(proc) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.mark.timeout(120)
def test_a_held_lock_makes_up_and_down_busy_and_nothing_starts(env, tmp_path):
    from reclaunch.runtime.locks import cluster_lock

    spec = sleeper(tmp_path, "locked")
    with cluster_lock("locked", "up"):
        proc = run(env, "up", spec, "--detach", "--yes")
        assert proc.returncode == 1 and "busy" in one_error_line(proc)
        assert "nothing was started" in proc.stderr
        assert not (Path(env["RECLAUNCH_HOME"]) / "local" / "locked").exists()
        proc = run(env, "down", "locked", "--yes")
        assert proc.returncode == 1 and "busy" in one_error_line(proc)


@pytest.mark.timeout(180)
def test_two_ups_at_once_start_one_cluster(env, tmp_path):
    spec = sleeper(tmp_path, "twins")
    cmd = [sys.executable, "-m", "reclaunch", "up", str(spec), "--detach", "--yes"]
    procs = [subprocess.Popen(cmd, env=env, cwd=ROOT, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 1], outs
    loser = next(err for (out, err), p in zip(outs, procs) if p.returncode == 1)
    assert "busy" in loser or "already up" in loser, loser
    winner = next(out for (out, err), p in zip(outs, procs) if p.returncode == 0)
    assert "started twins (local)" in winner and "reclaunch logs twins -f" in winner  # --detach
    assert len(supervisors("twins")) == 1
    proc = run(env, "down", "twins", "--yes")
    assert proc.returncode == 0, proc.stderr
    from reclaunch.providers.local import proc as lp
    assert lp.run_pids("twins") == []


@pytest.mark.timeout(180)
def test_name_reuse_across_targets_is_refused_naming_the_first(env, tmp_path):
    spec = sleeper(tmp_path, "shared")
    assert run(env, "up", spec, "--detach", "--yes").returncode == 0
    aws = tmp_path / "shared-aws.yaml"
    aws.write_text(AWS.replace("name: criteo-deepfm", "name: shared"))
    proc = run(env, "up", aws, "--yes")
    line = one_error_line(proc)
    assert proc.returncode == 1 and "already taken by a local cluster" in line, line
    journal = (Path(env["RECLAUNCH_HOME"]) / "journal" / "shared.jsonl").read_text()
    assert '"cloud": "aws"' not in journal                 # the local record is intact
    st = json.loads(run(env, "status", "shared", "--json").stdout)
    assert st["cloud"] == "local" and st["state"] in ("Running", "Created")

    # Lost journal: `status` and `down NAME` still find it by its state directory.
    (Path(env["RECLAUNCH_HOME"]) / "journal" / "shared.jsonl").unlink()
    rows = json.loads(run(env, "status", "--json").stdout)
    assert [r["name"] for r in rows] == ["shared"] and rows[0]["state"] in ("Running", "Created")
    proc = run(env, "down", "shared", "--yes")
    assert proc.returncode == 0, proc.stderr
    from reclaunch.providers.local import proc as lp
    assert lp.run_pids("shared") == [] and not (Path(env["RECLAUNCH_HOME"]) / "local" / "shared").exists()


def test_a_cloud_record_holds_its_name_against_a_local_up(env, tmp_path):
    d = Path(env["RECLAUNCH_HOME"]) / "journal"
    d.mkdir(parents=True)
    rec = {"name": "cloudy", "cloud": "aws", "region": "us-east-1", "spec_path": "a.yaml"}
    (d / "cloudy.jsonl").write_text("".join(json.dumps(e) + "\n" for e in (
        {"t": 1, "step": "up", "outcome": "start"},
        {"t": 1, "step": "record", "outcome": "info", "record": rec},
        {"t": 2, "step": "provision", "outcome": "ok"})))
    proc = run(env, "up", sleeper(tmp_path, "cloudy"), "--detach", "--yes")
    assert proc.returncode == 1
    assert "already taken by a aws cluster in us-east-1 (from a.yaml)" in one_error_line(proc)
    assert not (Path(env["RECLAUNCH_HOME"]) / "local" / "cloudy").exists()


def test_one_damaged_state_file_does_not_hide_the_others(env):
    home = Path(env["RECLAUNCH_HOME"])
    for name, state in (("good", {"name": "good", "run_id": "r", "state": "Succeeded",
                                  "nodes": [], "torn_down": True}),
                        ("empty", {}), ("listed", []), ("typed", {"state": "Running", "nodes": 3})):
        (home / "local" / name).mkdir(parents=True)
        (home / "local" / name / "state.json").write_text(json.dumps(state))
    (home / "local" / "binary").mkdir(parents=True)
    (home / "local" / "binary" / "state.json").write_bytes(b"\x00\xff\xfe garbage")
    proc = run(env, "status", "--json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert rows["good"]["state"] == "Succeeded"
    for bad in ("empty", "listed", "typed", "binary"):
        assert rows[bad]["state"] == "Unknown"
        assert f"unreadable state ({home / 'local' / bad / 'state.json'})" in rows[bad]["message"]
    assert run(env, "status").returncode == 0


def test_local_down_without_yes_on_a_pipe_deletes_nothing(env):
    home = Path(env["RECLAUNCH_HOME"])
    (home / "local" / "kept" / "ckpt").mkdir(parents=True)
    (home / "local" / "kept" / "state.json").write_text(json.dumps(
        {"name": "kept", "run_id": "r", "state": "Succeeded", "nodes": []}))
    (home / "local" / "kept" / "ckpt" / "step-9.pt").write_bytes(b"w")
    proc = run(env, "down", "kept")
    assert proc.returncode == 2 and "pass --yes" in one_error_line(proc)
    assert (home / "local" / "kept" / "ckpt" / "step-9.pt").exists()


@pytest.mark.parametrize("url, needle", [
    ("ftp://alice:hunter2@example.com/x", "unsupported scheme 'ftp'"),
    ("s3://", "names no bucket"),
    ("https://alice:hunter2@", "names no bucket"),
])
def test_backend_scheme_checked_and_credentials_never_printed(env, url, needle):
    for args in (["up", ROOT / "examples" / "aws-deepfm-p4d.yaml", "--yes"], ["down", "x", "--yes"]):
        proc = run(env, *args, "--backend", url)
        line = one_error_line(proc)
        assert proc.returncode == 2 and needle in line, line
        assert "hunter2" not in proc.stderr + proc.stdout and "alice" not in proc.stderr


def test_down_of_a_name_that_is_no_cluster_name_takes_no_lock(env):
    for bad in ("NOPE", "a\tb", "x" * 41):
        proc = run(env, "down", bad, "--yes")
        assert proc.returncode == 2 and "is not a cluster name" in one_error_line(proc)
    assert not list((Path(env["RECLAUNCH_HOME"]) / "locks").glob("*")) \
        if (Path(env["RECLAUNCH_HOME"]) / "locks").exists() else True


def test_redact():
    from reclaunch.runtime.backend import check_backend, redact

    assert redact("https://alice:tok@api.example.com/org?sig=abc&x=1") == \
        "https://***@api.example.com/org?sig=***&x=1"
    assert redact("s3://bucket/prefix") == "s3://bucket/prefix"
    assert check_backend("azblob://container") == "azblob://container"


@pytest.mark.timeout(180)
def test_ctrl_c_hint_matches_what_up_then_does(env, tmp_path):
    spec = sleeper(tmp_path, "hinted")
    p = subprocess.Popen([sys.executable, "-m", "reclaunch", "up", str(spec), "--yes"], env=env,
                         cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    state = Path(env["RECLAUNCH_HOME"]) / "local" / "hinted" / "state.json"
    end = time.monotonic() + 90
    while time.monotonic() < end and '"Running"' not in (state.read_text() if state.exists() else ""):
        time.sleep(0.3)
    time.sleep(1.0)          # inside the watch loop
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    hint = one_error_line(subprocess.CompletedProcess([], 130, "", err))
    assert "already up" in hint and "resumes" not in hint, hint
    again = run(env, "up", spec, "--yes")             # ... and that is what `up` then says
    assert again.returncode == 1 and "already up" in one_error_line(again)
    assert run(env, "down", "hinted", "--yes").returncode == 0
