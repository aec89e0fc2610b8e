"""Issue 15 on clouds: a lost or damaged journal does not lose the cluster (`down FILE`
rebuilds the record, destroys, and verifies by the tag sweep), and the state backend's
credentials are never written to the journal."""

from __future__ import annotations

import dataclasses

import pytest

from reclaunch.errors import ReclaunchError, UsageError
from reclaunch.providers.aws import provider as aws
from reclaunch.providers.kubecloud import Answer
from reclaunch.runtime import lifecycle
from reclaunch.runtime.lifecycle import Pacing
from reclaunch.runtime.backend import redact
from reclaunch.runtime.journal import Journal

from .conftest import AWS_EXAMPLE

SECRET_BACKEND = "https://alice:s3cr3t-token@api.pulumi.example/org"


@pytest.fixture
def prov(world, monkeypatch):
    p = aws.provider(infra=world.infra, kube_for=lambda o: world.kube, clock=world.clock,
                     sleep=world.clock.sleep, console=world.env().console,
                     is_tty=lambda: False, verify=world.env().verify,
                     pacing=Pacing(verify_attempts=1))
    monkeypatch.setattr(p, "cloud", dataclasses.replace(p.cloud, credentials=lambda: Answer(True, "stubbed")))
    monkeypatch.setattr("reclaunch.providers.get", lambda cloud: p)
    return p


@pytest.mark.parametrize("damage", ["deleted", "binary", "wrong types"])
def test_down_file_finds_a_cloud_cluster_whose_journal_is_lost(world, plan, prov, damage):
    from reclaunch.providers.verbs import cli_down

    rec = lifecycle.record_for(plan, backend=redact(SECRET_BACKEND), spec_path=str(AWS_EXAMPLE))
    lifecycle.up(plan, prov.env(SECRET_BACKEND), yes=True, record=rec)
    assert world.cloud.tagged(plan.name)
    path = Journal(plan.name).path
    assert "s3cr3t" not in path.read_text() and "alice" not in path.read_text()
    if damage == "deleted":
        path.unlink()
    elif damage == "binary":
        path.write_bytes(b"\x00\xff garbage\n")
    else:
        path.write_text('{"t": 1, "step": "record", "outcome": "info", '
                        '"record": {"name": "x", "cloud": "aws", "nodes": "four"}}\n')
    with pytest.raises(ReclaunchError):                  # by name alone it cannot be found...
        cli_down(plan.name, yes=True, backend=SECRET_BACKEND)
    cli_down(str(AWS_EXAMPLE), yes=True, backend=SECRET_BACKEND)   # ...by its spec it can
    assert world.cloud.tagged(plan.name) == []
    text = Journal(plan.name).path.read_bytes()
    assert b"record rebuilt from" in text and b"s3cr3t" not in text


def test_a_redacted_backend_is_never_reused(world, plan, prov):
    rec = lifecycle.record_for(plan, backend=redact(SECRET_BACKEND))
    lifecycle.up(plan, prov.env(SECRET_BACKEND), yes=True, record=rec)
    with pytest.raises(UsageError, match="pass --backend URL again"):
        prov.down(plan.name, yes=True)
    prov.down(plan.name, yes=True, backend=SECRET_BACKEND)
    assert world.cloud.tagged(plan.name) == []
