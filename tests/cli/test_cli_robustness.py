"""The CLI contract under abuse: exit 0 ok / 1 runtime / 2 bad input, one line per error (spec
errors: `file:line: field: message`), never a traceback, never a hang, nothing created without
credentials. Every run is a real `python -m reclaunch` with its own RECLAUNCH_HOME and HOME, no
cloud credentials, and every endpoint pointed at a closed port on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
AWS_EXAMPLE = EXAMPLES / "aws-deepfm-p4d.yaml"
LOCAL_EXAMPLE = EXAMPLES / "local-deepfm.yaml"
CLOSED = "http://127.0.0.1:9"   # discard port: nothing listens, connections are refused at once

CREDENTIAL_VARS = ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                   "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                   "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_SHARED_CREDENTIALS_FILE",
                   "AWS_CONFIG_FILE", "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CREDENTIALS",
                   "GCE_METADATA_HOST", "CLOUDSDK_CONFIG", "AZURE_CLIENT_ID", "AZURE_TENANT_ID",
                   "AZURE_CLIENT_SECRET", "ARM_CLIENT_ID", "ARM_TENANT_ID", "ARM_USE_MSI",
                   "AZURE_SUBSCRIPTION_ID", "AZURE_CONFIG_DIR", "MSI_ENDPOINT",
                   "IDENTITY_ENDPOINT", "GOOGLE_CLOUD_PROJECT", "RECLAUNCH_DEBUG")


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if k not in CREDENTIAL_VARS}
    home = tmp_path / "user"
    home.mkdir()
    e.update(RECLAUNCH_HOME=str(tmp_path / "rl-home"), HOME=str(home), COLUMNS="200",
             AWS_EC2_METADATA_DISABLED="true", NO_GCE_CHECK="True",  # no metadata-server probes
             AWS_ENDPOINT_URL=CLOSED, RECLAUNCH_AZURE_PRICES_URL=CLOSED + "/api/retail/prices",
             RECLAUNCH_GCP_BILLING_URL=CLOSED)
    return e


@pytest.fixture
def fake_pulumi(tmp_path, env) -> Path:
    """A `pulumi` on PATH that only logs its calls: the credential check comes after the CLI's."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "pulumi-calls.log"
    script = bin_dir / "pulumi"
    script.write_text(f"#!/bin/sh\necho \"$*\" >> {calls}\necho v3.130.0\n")
    script.chmod(0o755)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return calls


def run(env, *args, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reclaunch", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT, **kw)


def assert_error(proc, code: int, *needles: str) -> str:
    """Exit `code`, no traceback, exactly one line on stderr containing every needle."""
    err = proc.stderr
    assert "Traceback" not in err, err
    assert proc.returncode == code, (proc.returncode, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


# ---- files that are not cluster.yaml files ---------------------------------------------------

def _bomb(path: Path) -> Path:
    """A billion-laughs YAML: 2 KB that aliases out to 9**8 values."""
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    for prev, cur in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def bad_files(tmp_path) -> dict[str, tuple[Path, str]]:
    d = tmp_path / "specs"
    d.mkdir()
    (d / "empty.yaml").write_text("")
    (d / "garbage.yaml").write_text(":::: [[[\n")
    (d / "huge.yaml").write_text("a" * (2 << 20))
    (d / "list.yaml").write_text("- 1\n")
    (d / "binary.yaml").write_bytes(b"\xff\xfe\x00garbage")
    return {
        "missing": (d / "nope.yaml", "no such file"),
        "empty": (d / "empty.yaml", "empty file"),
        "garbage": (d / "garbage.yaml", "YAML syntax error"),
        "huge": (d / "huge.yaml", "a cluster.yaml is at most"),
        "list": (d / "list.yaml", "expected a mapping"),
        "binary": (d / "binary.yaml", "binary data"),
        "bomb": (_bomb(d / "bomb.yaml"), "aliases expand"),
    }


@pytest.mark.parametrize("verb", ["validate", "plan", "render", "preview", "up"])
def test_unreadable_specs_are_one_line_exit_2(env, bad_files, verb):
    for what, (path, needle) in bad_files.items():
        proc = run(env, verb, path, timeout=30)
        line = assert_error(proc, 2, needle)
        assert line.startswith(str(path)), (what, line)


def test_endless_file_is_refused_not_read(env):
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    assert_error(run(env, "validate", "/dev/zero", timeout=30), 2, "not a regular file")


@pytest.mark.parametrize("args, needle", [
    (["plan", "{dir}"], "is a directory"),
    (["validate", "{dir}"], "is a directory"),
    (["nonsense"], "No such command"),
    (["plan", "--jsn", "x.yaml"], "Did you mean '--json'"),
    (["catalog", "--cloud", "local"], "'local' is not one of"),
    (["gc", "--cloud", "aws"], "Missing option '--region'"),
    (["logs", "x", "--rank", "y"], "not a valid integer"),
    (["preempt", "x"], "Missing option '--node'"),
])
def test_usage_errors_are_one_line(env, tmp_path, args, needle):
    args = [a.replace("{dir}", str(tmp_path)) for a in args]
    line = assert_error(run(env, *args), 2, needle)
    assert line.startswith("error: ") and "--help" in line


def test_bare_command_still_shows_help(env):
    proc = run(env)
    assert proc.returncode == 2 and "Usage:" in proc.stderr and "Traceback" not in proc.stderr


# ---- output paths ------------------------------------------------------------------------------

def test_out_paths_that_cannot_be_written(env, tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    assert_error(run(env, "render", AWS_EXAMPLE, "--out", a_file), 2, "is a file")
    assert_error(run(env, "render", AWS_EXAMPLE, "--out", a_file / "sub"), 2,
                 f"--out {a_file / 'sub'}: cannot write")
    assert_error(run(env, "schema", "--out", tmp_path / "no" / "dir.json"), 2,
                 "cannot write: No such file or directory")
    assert_error(run(env, "schema", "--out", tmp_path), 2, "is a directory")
    if Path("/dev/full").exists():
        assert_error(run(env, "schema", "--out", "/dev/full"), 1, "No space left")


@pytest.mark.parametrize("args", [["catalog"], ["catalog", "--json"], ["schema"],
                                  ["plan", AWS_EXAMPLE], ["render", AWS_EXAMPLE]])
def test_closed_pipe_is_not_a_failure(env, args):
    """`reclaunch catalog | head -1`: the reader is gone before we write; exit 0, stderr quiet."""
    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run([sys.executable, "-m", "reclaunch", *map(str, args)], env=env,
                              stdout=w, stderr=subprocess.PIPE, text=True, timeout=60, cwd=ROOT)
    finally:
        os.close(w)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


# ---- catalog -------------------------------------------------------------------------------------

@pytest.mark.parametrize("gpu, needle", [
    ("", "unknown GPU; known: "),
    ("B999", "unknown GPU; known: "),
    ("gb", "did you mean"),           # a look-alike is a question, not a silent answer
    ("80GB", "did you mean"),
])
def test_catalog_gpu_odd_values(env, gpu, needle):
    assert_error(run(env, "catalog", "--gpu", gpu), 2, "--gpu", needle)


def test_catalog_known_gpu_filtered_out_is_empty_not_unknown(env):
    proc = run(env, "catalog", "--json", "--gpu", "A100", "--cloud", "gcp", "--region", "nowhere-1")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []
    proc = run(env, "catalog", "--json", "--gpu", "a100")   # both A100 models
    assert {r["gpu"] for r in json.loads(proc.stdout)} == {"A100-40GB", "A100-80GB"}


def test_catalog_refresh_without_network_or_credentials(env):
    proc = run(env, "catalog", "refresh", "--dry-run", timeout=45)
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr
    failed = [ln for ln in proc.stdout.splitlines() if ln.startswith("failed, old prices kept:")]
    assert sorted(ln.split(":")[1].strip() for ln in failed) == ["aws", "azure", "gcp"], proc.stdout
    assert_error(run(env, "catalog", "refresh", "--region", "nowhere-1"), 2, "no catalog rows")


# ---- specs that validate but cannot be planned or previewed ---------------------------------

def _variant(tmp_path, src: Path, old: str, new: str) -> Path:
    text = src.read_text()
    assert old in text
    p = tmp_path / f"variant-{abs(hash(new))}.yaml"
    p.write_text(text.replace(old, new, 1))
    return p


def test_region_without_catalog_row(env, tmp_path):
    # eu-south-2 sells p5en but not the example's p4d (the catalog lists every p4d region).
    spec = _variant(tmp_path, AWS_EXAMPLE, "region: us-east-1", "region: eu-south-2")
    spec.write_text(spec.read_text().replace("zones: [us-east-1a]", "zones: [eu-south-2a]"))
    for verb in ("validate", "plan", "render", "preview"):   # a spec error: exit 2, at validate too
        line = assert_error(run(env, verb, spec), 2, f"{spec}:5: region:", "eu-south-2",
                            "regions that do:", "us-east-1")
        assert "refresh --region" not in line   # refresh cannot add a region: no such advice


def test_model_too_large_exits_1_after_the_plan(env, tmp_path):
    spec = _variant(tmp_path, AWS_EXAMPLE, "rows: 5e6}", "rows: 1e12}")
    proc = run(env, "plan", spec)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "does not fit" in proc.stdout


def test_gpu_with_no_offer_is_a_spec_error(env, tmp_path):
    # AWS sells L4 now (g6): the H100 NVL is Azure's alone (NC H100 v5)
    spec = _variant(tmp_path, AWS_EXAMPLE, "instance_type: p4d.24xlarge", "gpu: H100-NVL-94GB")
    assert_error(run(env, "plan", spec), 2, "gpu: no aws instance offers H100-NVL-94GB")


def test_cephfs_without_existing_is_caught_by_validate(env, tmp_path):
    spec = _variant(tmp_path, AWS_EXAMPLE, "kind: fsx-lustre\n  size: 2.4TiB",
                    "kind: cephfs")
    assert_error(run(env, "validate", spec), 2, "storage.existing: required for storage kind cephfs")


def test_preview_of_local_spec(env):
    assert_error(run(env, "preview", LOCAL_EXAMPLE), 2, "nothing to preview")


# ---- nothing running ----------------------------------------------------------------------------

def test_status_logs_down_with_nothing_running(env, tmp_path):
    proc = run(env, "status")
    assert proc.returncode == 0 and "no clusters" in proc.stdout
    assert run(env, "status", "--json").stdout.strip() == "[]"
    for args in (["status", "nope"], ["logs", "nope"], ["logs", "nope", "-f"],
                 ["down", "nope", "--yes"], ["preempt", "nope", "--node", "1"]):
        assert_error(run(env, *args), 2, "no cluster named")
    # A spec file without a journal may still run (issue 15: lost journal): `down FILE` goes to
    # its cloud, which first needs Pulumi and credentials; nothing is recorded when it cannot run.
    line = assert_error(run(env, "down", AWS_EXAMPLE, "--yes"), 1)
    assert "Pulumi CLI not found" in line or "no AWS credentials found" in line, line
    assert not list((Path(env["RECLAUNCH_HOME"]) / "journal").glob("*.jsonl"))
    for bad in ("../../etc", "", "NOPE"):
        assert_error(run(env, "status", bad), 2, "is not a cluster name")
    assert_error(run(env, "down", tmp_path), 2, "is a directory")
    assert_error(run(env, "down", tmp_path / "gone.yaml"), 2, "no such file")


def _journal(env, name: str, *lines: str) -> Path:
    d = Path(env["RECLAUNCH_HOME"]) / "journal"
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{name}.jsonl"
    p.write_text("".join(line + "\n" for line in lines))
    return p


def test_damaged_journals(env):
    _journal(env, "a", "1", "[]")
    _journal(env, "b", "{}")
    _journal(env, "c", json.dumps({"t": 1, "step": "record", "outcome": "info",
                                   "record": {"name": "c"}}))
    (Path(env["RECLAUNCH_HOME"]) / "journal" / "d.jsonl").write_bytes(b"\xff\xfe\n")
    (Path(env["RECLAUNCH_HOME"]) / "journal" / "e.jsonl").mkdir()
    for name in "abd":
        assert_error(run(env, "status", name), 2, "no cluster named")
    assert_error(run(env, "status", "c"), 1, "is damaged")
    assert_error(run(env, "status", "e"), 1, "cannot read the journal")
    proc = run(env, "status", "--json")          # one bad journal hides no other cluster
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    rows = json.loads(proc.stdout)
    assert [r["name"] for r in rows] == list("abcde")
    assert {r["state"] for r in rows} == {"Unknown"}


def test_unusable_reclaunch_home(env, tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    env["RECLAUNCH_HOME"] = str(a_file)
    assert_error(run(env, "status"), 1, "RECLAUNCH_HOME")


def test_logs_of_a_cluster_that_was_never_provisioned(env):
    _journal(env, "half", json.dumps({"t": 1, "step": "record", "outcome": "info",
                                      "record": {"name": "half", "cloud": "aws",
                                                 "region": "us-east-1"}}))
    assert_error(run(env, "logs", "half"), 1, "no provisioned cluster")
    proc = run(env, "status", "half", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["state"] == "Pending"


# ---- no credentials: one line with the fix, exit 1, nothing created ---------------------------

@pytest.mark.parametrize("spec, needle", [
    ("aws-deepfm-p4d.yaml", "no AWS credentials found"),
    ("azure-din-nd96amsr.yaml", "no Azure credentials found"),
    ("gcp-dcnv2-a3mega.yaml", "no Google Cloud credentials found"),
])
def test_up_and_down_without_credentials(env, fake_pulumi, spec, needle):
    for args in (["up", EXAMPLES / spec, "--yes"], ["up", EXAMPLES / spec],
                 ["up", EXAMPLES / spec, "--detach", "--yes"]):
        line = assert_error(run(env, *args), 1, needle)
        assert "(run `" in line or "set " in line          # the fix is on the same line
    home = Path(env["RECLAUNCH_HOME"])
    assert not (home / "journal").exists() or not any((home / "journal").iterdir())
    assert not (home / "stacks").exists()
    # A cluster known from an earlier `up`: `down` stops at the same check, before Pulumi.
    cloud = spec.split("-")[0]
    _journal(env, "known", json.dumps({"t": 1, "step": "record", "outcome": "info",
                                       "record": {"name": "known", "cloud": cloud,
                                                  "region": "r"}}))
    assert_error(run(env, "down", "known", "--yes"), 1, needle)
    assert not fake_pulumi.exists(), fake_pulumi.read_text()


@pytest.mark.parametrize("cloud, region", [("aws", "us-east-1"), ("azure", "eastus"),
                                           ("gcp", "us-central1")])
def test_gc_without_credentials(env, cloud, region):
    for extra in ([], ["--yes"]):
        line = assert_error(run(env, "gc", "--cloud", cloud, "--region", region, *extra,
                                timeout=45), 1)
        assert "credentials" in line or "subscription" in line, line


def test_gc_azure_auth_failure_is_one_line(env):
    """DefaultAzureCredential logs a multi-line warning when every credential fails."""
    env.update(AZURE_SUBSCRIPTION_ID="00000000-0000-0000-0000-000000000000",
               IDENTITY_ENDPOINT=CLOSED + "/", IDENTITY_HEADER="x",   # managed identity: refused
               AZURE_AUTHORITY_HOST="https://127.0.0.1:9")
    assert_error(run(env, "gc", "--cloud", "azure", "--region", "eastus", timeout=45), 1,
                 "Azure authentication failed")


@pytest.mark.parametrize("region", ["", "us east 1/x"])
def test_gc_bad_region(env, region):
    assert_error(run(env, "gc", "--cloud", "aws", "--region", region), 2, "is not a region name")


# ---- Ctrl-C ------------------------------------------------------------------------------------

def test_ctrl_c_during_up_says_what_is_left(monkeypatch, capsys):
    """In-process: a KeyboardInterrupt from the lifecycle (no real training run needed)."""
    from reclaunch import cli
    from reclaunch.providers import verbs

    def interrupted(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(verbs, "cli_up", interrupted)
    with pytest.raises(SystemExit) as exc:
        cli.main(["up", str(LOCAL_EXAMPLE), "--yes"])
    assert exc.value.code == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "interrupted" in err[0] and "reclaunch down" in err[0]


def test_ctrl_c_elsewhere_is_one_line_130(monkeypatch, capsys):
    from reclaunch import cli
    from reclaunch.providers import verbs

    def interrupted(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(verbs, "cli_status", interrupted)
    with pytest.raises(SystemExit) as exc:
        cli.main(["status"])
    assert exc.value.code == 130
    assert "aborted" in capsys.readouterr().err


# ---- cloud: local odd values (a fabricated cluster directory: no training run) ---------------

def _local_cluster(env, name: str = "loc") -> Path:
    _journal(env, name, json.dumps({"t": 1, "step": "record", "outcome": "info",
                                    "record": {"name": name, "cloud": "local"}}))
    root = Path(env["RECLAUNCH_HOME"]) / "local" / name
    (root / "nodes").mkdir(parents=True)
    (root / "launch.json").write_text(json.dumps({"name": name, "nodes": 2, "max_nodes": 2,
                                                  "nproc": 1}))
    # "Running", supervised by a live process (this test run), so the drill gets to its checks.
    from reclaunch.providers.local.ident import identity   # issue 15: pid + start time
    (root / "state.json").write_text(json.dumps({"state": "Running", "supervisor_pid": os.getpid(),
                                                 "supervisor_id": identity(os.getpid()),
                                                 "nodes": [{"index": 0, "state": "running"},
                                                           {"index": 1, "state": "running"}]}))
    return root


def test_local_logs_rank_that_cannot_exist(env):
    _local_cluster(env)
    for rank in ("2", "-1"):
        assert_error(run(env, "logs", "loc", "--rank", rank), 2, "no rank", "ranks 0..1")
    assert run(env, "logs", "loc", "--rank", "1").returncode == 0


@pytest.mark.parametrize("args", [["--notice", "nan"], ["--notice", "inf"], ["--notice", "-1"],
                                  ["--replace-after", "nan"]])
def test_local_preempt_odd_delays(env, args):
    root = _local_cluster(env)
    assert_error(run(env, "preempt", "loc", "--node", "0", *args), 2, "must be >= 0 seconds")
    assert not (root / "control").exists()      # no drill was requested
    assert_error(run(env, "preempt", "loc", "--node", "7"), 2, "has nodes 0..1")


def test_logs_shows_rank_0_without_metrics_by_default(env):
    root = _local_cluster(env)
    (root / "nodes" / "node-0.log").write_text(
        '[rank0]: step=20 loss=0.5\n[rank0]: RECLAUNCH_METRICS {"step": 20}\nagent line\n')
    (root / "nodes" / "node-1.log").write_text("[rank1]: step=20 loss=0.6\n")
    out = run(env, "logs", "loc")
    assert out.returncode == 0 and out.stdout == "[rank0]: step=20 loss=0.5\n", out.stdout
    assert "RECLAUNCH_METRICS" in run(env, "logs", "loc", "--metrics").stdout
    every = run(env, "logs", "loc", "--all").stdout
    assert "[rank1]: step=20" in every and "[node-0] agent line" in every
    assert "RECLAUNCH_METRICS" not in every
