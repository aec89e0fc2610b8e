"""infra.py without a Pulumi CLI: the missing-CLI stop, state/passphrase files, keep-storage
selection, credential messages, and that none of this loads heavy modules at import."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from reclaunch.runtime import infra
from reclaunch.errors import ProviderError

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = ("Pulumi CLI not found on PATH; `reclaunch up` and `down` need it to provision the "
            "cluster (install it: curl -fsSL https://get.pulumi.com | sh  (or: brew install pulumi))")


@pytest.fixture
def no_pulumi(monkeypatch, tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


def test_missing_cli_exact_message(no_pulumi):
    with pytest.raises(ProviderError) as exc:
        infra.check_pulumi_cli()
    assert str(exc.value) == EXPECTED and exc.value.exit_code == 1
    assert "\n" not in str(exc.value)


def test_up_example_stops_before_creating_anything(no_pulumi):
    from reclaunch.providers import verbs
    home = Path(os.environ["RECLAUNCH_HOME"])
    with pytest.raises(ProviderError) as exc:
        verbs.cli_up(str(ROOT / "examples" / "aws-deepfm-p4d.yaml"), yes=True)
    assert str(exc.value) == EXPECTED
    assert not (home / "state" / ".pulumi").exists()
    assert not (home / "stacks").exists() and not (home / "journal").exists()


def test_pulumi_infra_checks_cli_before_touching_state(no_pulumi):
    pi = infra.PulumiInfra(program=lambda plan: (lambda: None))
    with pytest.raises(ProviderError, match="Pulumi CLI not found"):
        pi.pending("x")
    assert not (Path(os.environ["RECLAUNCH_HOME"]) / "stacks" / "x" / "Pulumi.yaml").exists()


def test_down_without_cli_stops_too(no_pulumi, plan):
    from reclaunch.runtime.journal import Journal
    from reclaunch.runtime.lifecycle import record_for
    from reclaunch.providers.aws import provider as aws
    Journal(plan.name).save_record(record_for(plan))
    with pytest.raises(ProviderError, match="Pulumi CLI not found"):
        aws.provider().down(plan.name, yes=True)


@pytest.mark.parametrize("cloud,needle", [
    ("aws", "aws configure"), ("azure", "az login"), ("gcp", "application-default login")])
def test_missing_credentials_one_line(cloud, needle, monkeypatch, tmp_path):
    import importlib
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AZURE_CONFIG_DIR",
                "CLOUDSDK_CONFIG", "ARM_CLIENT_ID", "AZURE_TENANT_ID", "GOOGLE_CREDENTIALS",
                "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "GCE_METADATA_HOST", "IDENTITY_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    mod = importlib.import_module(f"reclaunch.providers.{cloud}.provider")
    got = mod.credentials()   # the same check `reclaunch check` prints
    assert got.ok is False and needle in got.fix
    fake_pulumi = tmp_path / "bin" / "pulumi"
    fake_pulumi.parent.mkdir()
    fake_pulumi.write_text("#!/bin/sh\nexit 0\n")
    fake_pulumi.chmod(0o755)
    monkeypatch.setenv("PATH", str(fake_pulumi.parent))
    with pytest.raises(ProviderError) as exc:
        mod.provider().check_ready(None)
    assert "\n" not in str(exc.value) and needle in str(exc.value)


def test_home_state_and_passphrase_are_private(monkeypatch):
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    home = Path(os.environ["RECLAUNCH_HOME"])
    backend = infra.default_backend()
    assert backend == "file://" + str(home / "state")
    assert stat.S_IMODE((home / "state").stat().st_mode) == 0o700
    p1 = infra.passphrase()
    assert len(p1) >= 32 and infra.passphrase() == p1
    assert stat.S_IMODE((home / "passphrase").stat().st_mode) == 0o600
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "from-env")
    assert infra.passphrase() == "from-env"


def test_keep_storage_keeps_storage_and_what_it_needs():
    res = [
        {"urn": "stack", "type": "pulumi:pulumi:Stack"},
        {"urn": "vpc", "type": "aws:ec2/vpc:Vpc"},
        {"urn": "subnet", "type": "aws:ec2/subnet:Subnet", "dependencies": ["vpc"]},
        {"urn": "eks", "type": "aws:eks/cluster:Cluster", "dependencies": ["subnet"]},
        {"urn": "ng", "type": "aws:eks/nodeGroup:NodeGroup", "dependencies": ["eks"]},
        {"urn": "fs", "type": "aws:fsx/lustreFileSystem:LustreFileSystem", "id": "fs-1",
         "propertyDependencies": {"subnetIds": ["subnet"]}},
    ]
    assert infra.storage_keep_set(res, set()) == {"fs", "subnet", "vpc"}


def test_fake_engine_event_shape_matches_simplify():
    from types import SimpleNamespace as NS
    meta = NS(op="create", urn="urn:x", type="aws:eks/cluster:Cluster")
    ev = NS(resource_pre_event=None, res_outputs_event=NS(metadata=meta), res_op_failed_event=None,
            diagnostic_event=None, summary_event=None)
    assert infra.simplify(ev) == {"kind": "resource", "urn": "urn:x", "op": "create",
                                  "type": "aws:eks/cluster:Cluster", "status": "done"}


def test_lazy_imports():
    code = ("import sys, reclaunch.cli, reclaunch.runtime.lifecycle, reclaunch.runtime.infra, reclaunch.runtime.kube, "
            "reclaunch.runtime.journal, reclaunch.runtime.budget, reclaunch.providers.aws, "
            "reclaunch.providers.azure, reclaunch.providers.gcp;"
            "bad=[m for m in sys.modules if m.split('.')[0] in "
            "('pulumi','kubernetes','boto3','botocore','azure','google')];"
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
