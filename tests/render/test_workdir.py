"""Issue 42: job.workdir, code without an image rebuild. Packing (git's .gitignore rules, the
size bound, secrets refused, one archive per content), the plan's startup step, and what the
clouds' launch carries: a ConfigMap and an init container, or the checkpoint bucket."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from reclaunch.errors import PlanError, UsageError
from reclaunch.spec import parse_spec
from tests.conftest import EXAMPLES

AWS = (EXAMPLES / "aws-deepfm-p4d.yaml").read_text()


def _tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, body in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(body if isinstance(body, bytes) else body.encode())
    return root


def _spec(tmp_path: Path, text: str = AWS, workdir: str = "code", extra: str = ""):
    text = text.replace("  command: [python, /app/train.py]",
                        f"  command: [python, train.py]\n  workdir: {workdir}{extra}")
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return parse_spec(text, str(path))


def _names(pack) -> list[str]:
    data = Path(pack.path).read_bytes()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return sorted(m.name for m in tar.getmembers())


CODE = {"train.py": "print('hi')\n", "lib/model.py": "X = 1\n", ".gitignore": "data/\n*.log\n",
        "data/big.bin": b"\0" * 4096, "run.log": "noise\n"}


@pytest.mark.parametrize("git_repo", [False, True])
def test_pack_applies_gitignore_in_a_plain_directory_and_in_a_repository(tmp_path, git_repo):
    from reclaunch.runtime.workdir import pack

    _tree(tmp_path / "code", CODE)
    if git_repo:
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=30)
    p = pack(_spec(tmp_path))
    assert _names(p) == [".gitignore", "lib/model.py", "train.py"]
    assert p.files == 3 and p.inline is not None and len(p.inline) == p.archive_bytes
    assert hashlib.sha256(Path(p.path).read_bytes()).hexdigest() == p.digest
    assert oct(Path(p.path).stat().st_mode & 0o777) == "0o600"


def test_the_archive_is_addressed_by_its_content(tmp_path):
    from reclaunch.runtime.workdir import pack

    _tree(tmp_path / "code", CODE)
    first = pack(_spec(tmp_path))
    os.utime(tmp_path / "code" / "train.py", (1, 1))          # a touch is no change
    assert pack(_spec(tmp_path)).digest == first.digest
    (tmp_path / "code" / "train.py").write_text("print('changed')\n")
    assert pack(_spec(tmp_path)).digest != first.digest


def test_a_workdir_over_its_bound_names_the_largest_files(tmp_path):
    from reclaunch.runtime.workdir import pack

    _tree(tmp_path / "code", {"train.py": "x\n", "weights.pt": b"\1" * 300_000})
    with pytest.raises(UsageError) as info:
        pack(_spec(tmp_path, extra="\n  workdir_max_size: 100KiB"))
    msg = str(info.value)
    assert msg.startswith(f"{tmp_path / 'cluster.yaml'}:") and "job.workdir:" in msg
    assert "is over job.workdir_max_size 100 KiB; largest: weights.pt 293 KiB" in msg
    assert info.value.exit_code == 2 and ".gitignore" in info.value.hint


@pytest.mark.parametrize("name, body", [
    ("keys/id_rsa", "not even a key"),
    (".env", "WANDB_API_KEY=x\n"),
    ("conf/settings.py", "AWS = 'AKIAABCDEFGHIJKLMNOP'\n"),
    ("notes.txt", "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n"),
])
def test_secrets_are_refused_with_the_file_named(tmp_path, name, body):
    from reclaunch.runtime.workdir import pack

    _tree(tmp_path / "code", {"train.py": "x\n", name: body})
    with pytest.raises(UsageError) as info:
        pack(_spec(tmp_path))
    assert f"{name} look(s) like credentials" in str(info.value)
    assert "job.env" in info.value.hint
    _tree(tmp_path / "code", {".gitignore": f"{name}\n"})      # ignored: not packed, fine
    assert name not in _names(pack(_spec(tmp_path)))


def test_a_link_out_of_the_workdir_is_left_out_and_said(tmp_path):
    from reclaunch.runtime.workdir import pack, unpack

    _tree(tmp_path / "code", {"train.py": "x\n", "cfg/a.yaml": "a: 1\n"})
    (tmp_path / "secret.txt").write_text("outside")
    (tmp_path / "code" / "out").symlink_to(tmp_path / "secret.txt")
    (tmp_path / "code" / "in").symlink_to("cfg/a.yaml")
    p = pack(_spec(tmp_path))
    assert "out" not in _names(p) and "in" in _names(p)
    assert any("out (a link out of the workdir)" in n for n in p.notes)
    unpack(p.path, tmp_path / "unpacked", p.digest)
    assert (tmp_path / "unpacked" / "in").read_text() == "a: 1\n"


def test_a_missing_directory_is_one_line(tmp_path):
    from reclaunch.runtime.workdir import pack

    with pytest.raises(UsageError) as info:
        pack(_spec(tmp_path, workdir="nope"))
    assert "job.workdir:" in str(info.value) and "is not a directory" in str(info.value)


# ------------------------------------------------------------------ the plan and the launch

def _plan(spec):
    from reclaunch.planner import make_plan
    from reclaunch.runtime.measurements import plan_context

    return make_plan(spec, context=plan_context(spec))


def test_the_plan_counts_upload_and_unpack_in_the_startup(tmp_path):
    _tree(tmp_path / "code", {"train.py": "x\n", "blob.bin": os.urandom(2_000_000)})
    spec = _spec(tmp_path)
    with_wd = _plan(spec)
    without = _plan(parse_spec(AWS))
    step = with_wd.startup.steps[-1]
    assert step.name.startswith("workdir (1.91 MiB packed, 2 files: upload from here")
    assert step.billed and step.seconds == pytest.approx(2_000_000 / 1.25e6 + 2_000_003 / 50e6, rel=0.01)
    assert with_wd.startup.seconds == pytest.approx(without.startup.seconds + step.seconds)
    assert with_wd.to_json()["workdir"]["files"] == 2


def test_a_tiny_workdir_travels_in_a_configmap_and_an_init_container_unpacks_it(tmp_path):
    from reclaunch.manifests.job import render
    from reclaunch.manifests.workdir import UNPACK

    _tree(tmp_path / "code", CODE)
    plan = _plan(_spec(tmp_path))
    objs = render(plan)
    cm = next(o for o in objs if o["metadata"]["name"] == "criteo-deepfm-workdir")
    pack = plan.context.workdir
    assert base64.b64decode(cm["binaryData"]["workdir.tar.gz"]) == Path(pack.path).read_bytes()
    job = objs[-1]
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        pod = replica["template"]["spec"]
        init = pod["initContainers"][0]
        assert init["name"] == "workdir" and init["image"] == "ghcr.io/acme/recsys-train:1.4"
        assert init["command"] == ["python3", "-c", UNPACK,
                                   "/reclaunch/workdir-archive/workdir.tar.gz", "/workdir", pack.digest]
        main = pod["containers"][0]
        assert main["workingDir"] == "/workdir"
        assert {"name": "workdir", "mountPath": "/workdir"} in main["volumeMounts"]
        assert {"name": "workdir-archive", "configMap": {"name": "criteo-deepfm-workdir"}} in pod["volumes"]
    # the pods' own unpack script, run here: checks the digest, unpacks, refuses a wrong one
    archive = tmp_path / "a.tar.gz"
    archive.write_bytes(Path(pack.path).read_bytes())
    import sys
    ok = subprocess.run([sys.executable, "-c", UNPACK, str(archive), str(tmp_path / "w"), pack.digest],
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "w" / "lib" / "model.py").read_text() == "X = 1\n"
    bad = subprocess.run([sys.executable, "-c", UNPACK, str(archive), str(tmp_path / "x"), "0" * 64],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "not the 000000000000 `up` packed" in bad.stderr


def test_a_larger_workdir_goes_next_to_the_bucket_checkpoints_or_is_refused(tmp_path):
    from reclaunch.manifests.job import render

    _tree(tmp_path / "code", {"train.py": "x\n", "vocab.bin": os.urandom(900_000)})
    spot = (EXAMPLES / "aws-spot-bucket.yaml").read_text()
    plan = _plan(_spec(tmp_path, text=spot))
    pack = plan.context.workdir
    assert pack.inline is None
    objs = render(plan)
    assert not [o for o in objs if o["metadata"]["name"].endswith("-workdir")]
    pod = next(iter(objs[-1]["spec"]["pytorchReplicaSpecs"].values()))["template"]["spec"]
    src = pod["initContainers"][0]["command"][3]
    assert src.startswith(plan.spec.job.checkpoint.path.rstrip("/") + "/.reclaunch-workdir/")
    assert pod["serviceAccountName"] == f"{plan.name}-trainer"   # the identity that may read it
    with pytest.raises(PlanError) as info:                   # a file system, no bucket
        render(_plan(_spec(tmp_path)))
    assert "over the 700 KiB a ConfigMap holds" in str(info.value)
    assert "job.checkpoint.path: s3://" in str(info.value)
