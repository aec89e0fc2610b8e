"""Issue 26: job.env secrets by reference, never in plaintext; env values and names and the
storage mount path that can only fail later (or silently replace the plan) refused at validate."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from reclaunch.errors import SpecError, UsageError
from reclaunch.spec import parse_spec

ROOT = Path(__file__).resolve().parents[2]
AWS = (ROOT / "examples" / "aws-deepfm-p4d.yaml").read_text()


def spec_with(job_env=None, mount=None, text=AWS):
    doc = yaml.safe_load(text)
    if job_env is not None:
        doc["job"]["env"] = job_env
    if mount is not None:
        doc.setdefault("storage", {})["mount_path"] = mount
    return yaml.safe_dump(doc)


@pytest.mark.parametrize("env,needle", [
    ({"A": "x\0y"}, "job.env.A: holds a NUL byte"),
    ({"A": "x" * (128 * 1024 + 1)}, "job.env.A: is over 128 KiB"),
    ({"RANK": "3"}, "RANK is set by the launcher"),
    ({"WORLD_SIZE": "3", "MASTER_ADDR": "evil"}, "MASTER_ADDR, WORLD_SIZE are set"),
    ({"RECLAUNCH_SHARDING": "{}"}, "RECLAUNCH_SHARDING is set"),
    ({"T": {"secret": "hf"}}, "job.env.T.key: required field is missing"),
    ({"T": {"secret": "Not_A_Name", "key": "k"}}, "job.env.T.secret"),
    ({"AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE"}, "job.env.AWS_ACCESS_KEY_ID: holds an AWS access key ID"),
    ({"GH": "ghp_" + "a1" * 18}, "job.env.GH: holds a GitHub token"),
    ({"X": "hf_" + "Ab" * 17}, "job.env.X: holds a Hugging Face token"),
    ({"K": "-----BEGIN RSA PRIVATE KEY-----\nMII"}, "job.env.K: holds a PEM private key"),
])
def test_bad_job_env_is_one_line_at_validate(env, needle):
    with pytest.raises(SpecError) as e:
        parse_spec(spec_with(env), "c.yaml")
    assert any(needle in p and p.startswith("c.yaml:") for p in e.value.problems), e.value.problems


@pytest.mark.parametrize("mount", ["/", "/proc", "/dev", "/sys/fs", "/data/../etc", "//"])
def test_system_mount_paths_are_refused(mount):
    with pytest.raises(SpecError) as e:
        parse_spec(spec_with(mount=mount), "c.yaml")
    assert "storage.mount_path" in e.value.problems[0] and "system directory" in e.value.problems[0]


def test_trainer_knobs_stay_the_users():
    s = parse_spec(spec_with({"RECLAUNCH_LR": "0.01", "RECLAUNCH_FAULT": "x", "N": 1}), "c.yaml")
    assert s.job.env["N"] == "1"


def _render(env):
    from reclaunch.manifests.job import render
    from reclaunch.planner import make_plan

    plan = make_plan(parse_spec(spec_with(env), "c.yaml"))
    job = next(o for o in render(plan) if o.get("kind") == "PyTorchJob")
    specs = job["spec"]["pytorchReplicaSpecs"]
    return plan, [e for r in specs.values() for e in r["template"]["spec"]["containers"][0]["env"]]


def test_a_credential_refused_in_job_env_is_never_repeated_and_names_do_not_decide():
    with pytest.raises(SpecError) as e:
        parse_spec(spec_with({"AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE"}), "c.yaml")
    assert "AKIAIOSFODNN7EXAMPLE" not in " ".join(e.value.problems)
    # a secret-looking name with a value of no credential format validates (redacted when shown)
    parse_spec(spec_with({"TOKENIZER_PATH": "/data/tok", "API_KEY": "s3cr3t"}), "c.yaml")


def test_a_secret_reference_renders_as_secret_key_ref_and_never_as_a_value():
    plan, env = _render({"HF_TOKEN": {"secret": "hf", "key": "token"}, "NCCL_DEBUG": "INFO"})
    refs = [e for e in env if e["name"] == "HF_TOKEN"]
    assert refs and all(e == {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}
                        for e in refs)
    assert {"name": "NCCL_DEBUG", "value": "INFO"} in env
    from reclaunch.manifests.env import job_env
    assert "HF_TOKEN" not in job_env(plan)


def test_printed_manifests_redact_secret_looking_values():
    from reclaunch.manifests.secrets import REDACTED, redacted

    _, env = _render({"API_KEY": "s3cr3t", "DB_PASSWORD": "pw", "PLAIN": "ok"})
    objs = [{"spec": {"containers": [{"env": env}]}}]
    shown = redacted(objs)[0]["spec"]["containers"][0]["env"]
    values = {e["name"]: e.get("value") for e in shown}
    assert values["API_KEY"] == REDACTED and values["DB_PASSWORD"] == REDACTED
    assert values["PLAIN"] == "ok"
    assert {e["name"]: e.get("value") for e in env}["API_KEY"] == "s3cr3t"   # copy only


def _cli(tmp_path, *args):
    env = {**os.environ, "RECLAUNCH_HOME": str(tmp_path / "home")}
    return subprocess.run([sys.executable, "-m", "reclaunch", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)


def test_dry_run_and_render_never_print_a_secret_and_files_are_owner_only(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(spec_with({"MY_TOKEN": "tok-123456", "HF": {"secret": "hf", "key": "token"}}))
    for args in (["up", "--dry-run", "-o", "yaml", str(f)], ["render", str(f)]):
        p = _cli(tmp_path, *args)
        assert p.returncode == 0, p.stderr
        assert "tok-123456" not in p.stdout + p.stderr and "redacted" in p.stdout
        assert "secretKeyRef" in p.stdout
    out = tmp_path / "out"
    p = _cli(tmp_path, "render", str(f), "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    files = list(out.glob("*.yaml"))
    assert files and all(stat.S_IMODE(x.stat().st_mode) == 0o600 for x in files)
    assert any("tok-123456" in x.read_text() for x in files)   # written, to owner-only files


class Ref:
    def __init__(self, secret, key):
        self.secret, self.key = secret, key


def test_local_secrets_from_an_owner_only_file_or_the_environment(tmp_path, monkeypatch):
    from reclaunch.providers.local.secrets import env_file, resolve

    monkeypatch.setenv("RECLAUNCH_HOME", str(tmp_path))
    path = env_file("hf")
    path.parent.mkdir(parents=True)
    path.write_text("# hf\ntoken=abc=def\n")
    os.chmod(path, 0o600)
    assert resolve({"HF_TOKEN": Ref("hf", "token")}, environ={}) == {"HF_TOKEN": "abc=def"}
    assert resolve({"X": Ref("none", "k")}, environ={"X": "from-env"}) == {"X": "from-env"}
    with pytest.raises(UsageError, match="not found on this machine") as e:
        resolve({"Y": Ref("none", "k")}, environ={})
    assert "export Y" in str(e.value)
    os.chmod(path, 0o644)
    with pytest.raises(UsageError, match="mode 644"):
        resolve({"HF_TOKEN": Ref("hf", "token")}, environ={})
