"""`up` renders the launch once (placement check, journal record and apply share it), and
again only when provisioning changed the plan (issue 23 point 4); a provider's up takes one
typed UpOptions."""

from __future__ import annotations

import dataclasses

import pytest

from reclaunch.manifests import job as jobmod
from reclaunch.providers.aws import provider as aws
from reclaunch.providers.kubecloud import Answer
from reclaunch.providers.options import UpOptions
from reclaunch.runtime import lifecycle


@pytest.fixture
def renders(monkeypatch):
    calls = []
    real = jobmod.render

    def counting(plan, *a, **kw):
        calls.append(plan)
        return real(plan, *a, **kw)
    monkeypatch.setattr(jobmod, "render", counting)
    return calls


def test_up_renders_the_launch_once(world, plan, renders):
    st = lifecycle.up(plan, world.env(), yes=True)
    assert st.state == "Running"
    assert len(renders) == 1, f"rendered {len(renders)} times"


def test_provider_up_takes_options_and_renders_once(world, plan, renders, monkeypatch):
    p = aws.provider(infra=world.infra, kube_for=lambda o: world.kube, clock=world.clock,
                     sleep=world.clock.sleep, console=world.env().console,
                     is_tty=lambda: False, verify=world.env().verify)
    monkeypatch.setattr(p, "cloud", dataclasses.replace(p.cloud, credentials=lambda: Answer(True, "stubbed")))
    started = []
    st = p.up(plan, UpOptions(yes=True, detach=False, on_started=lambda: started.append(1)))
    assert st.state in ("Running", "Succeeded") and started == [1]
    assert len(renders) == 1
    with pytest.raises(TypeError):
        UpOptions(watch=False)   # one bit, named detach: a misspelt option fails where it is built
