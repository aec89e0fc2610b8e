"""AKS encryption at host: on by default where Azure allows it, asked at `up` from recorded
Resource SKUs and Features answers on 127.0.0.1 (issue 24)."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import pytest

from reclaunch.errors import ProviderError
from stacks.azure.host_encryption import Probe, decide, person_lines
from tests.recorded_server import RecordedServer
from tests.stacks.conftest import make_plan

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "recorded" / "azure" / "host_encryption.json"
SUB = json.loads(FIXTURE.read_text())["subscription"]
FEATURE = (f"/subscriptions/{SUB}/providers/Microsoft.Features/providers/Microsoft.Compute/"
           "features/EncryptionAtHost")
SIZES = ["Standard_D4s_v5", "Standard_ND96amsr_A100_v4"]
KEY = "reclaunch:encryptionAtHost"


class FakeCredential:
    def get_token(self, *scopes, **kwargs):
        from azure.core.credentials import AccessToken
        return AccessToken("fake-token", int(time.time()) + 3600)


def _plan(value=None):
    plan = make_plan("azure")
    sec = plan.spec.security.model_copy(update={"encryption_at_host": value})
    return dataclasses.replace(plan, spec=plan.spec.model_copy(update={"security": sec}))


def _client(url):
    from azure.core.pipeline.policies import SansIOHTTPPolicy

    from reclaunch.providers.azure.host_encryption import make_client
    return make_client(SUB, credential=FakeCredential(), base_url=url,
                       authentication_policy=SansIOHTTPPolicy(), retry_total=0)


@pytest.fixture
def arm():
    with RecordedServer() as srv:
        srv.load(FIXTURE)
        yield srv


def _probe(srv, plan, state="Registered"):
    from reclaunch.providers.azure.host_encryption import probe

    srv.add("GET", FEATURE, body={"name": "Microsoft.Compute/EncryptionAtHost",
                                  "properties": {"state": state}})
    return probe(plan, client=_client(srv.url), sub=SUB)


def test_recorded_answers_turn_it_on_for_every_supported_pool(arm):
    plan = _plan()
    answer = _probe(arm, plan)
    assert not arm.unmatched and not answer.error
    # Both pages read; the disk SKU and the size without the capability are not counted.
    assert answer.supported == {"Standard_D4s_v5", "Standard_ND96amsr_A100_v4"}
    assert answer.registered is True
    assert any(r.query.get("$skiptoken") == "p2" for r in arm.calls("GET"))
    assert decide(plan, answer) == {s: True for s in SIZES}
    assert person_lines(plan, answer) == []


def test_not_registered_means_off_and_the_register_command_for_a_person(arm):
    plan = _plan()
    answer = _probe(arm, plan, state="NotRegistered")
    assert answer.registered is False
    assert decide(plan, answer) == {s: False for s in SIZES}
    from stacks.azure.prerequisites import manual_prerequisites

    lines = manual_prerequisites(plan, host=answer)
    line = next(ln for ln in lines if "EncryptionAtHost" in ln)
    assert "WITHOUT encryption at host" in line
    assert "az feature register --namespace Microsoft.Compute --name EncryptionAtHost" in line


def test_required_but_not_registered_stops_before_anything_is_created(arm):
    from reclaunch.providers.azure.host_encryption import checked

    plan = _plan(True)
    arm.add("GET", FEATURE, body={"properties": {"state": "NotRegistered"}})
    with pytest.raises(ProviderError, match="not Registered; register it: `az feature register"):
        checked(plan, client=_client(arm.url), sub=SUB)


def test_required_on_an_unsupported_size_names_it():
    from stacks.azure.host_encryption import refusal

    answer = Probe(frozenset({"Standard_D4s_v5"}), True)
    why = refusal(_plan(True), answer)
    assert why and "Standard_ND96amsr_A100_v4 does not support encryption at host in eastus" in why
    assert refusal(_plan(), answer) is None                    # the default never refuses
    assert decide(_plan(), answer) == {"Standard_D4s_v5": True,
                                       "Standard_ND96amsr_A100_v4": False}
    assert "those pools run without it" in person_lines(_plan(), answer)[0]


def test_a_failed_call_leaves_it_off_by_default_and_says_why():
    from reclaunch.providers.azure.host_encryption import probe

    with RecordedServer() as srv:       # no routes: every call is a 404
        answer = probe(_plan(), client=_client(srv.url), sub=SUB)
    assert answer.supported is None and answer.registered is None
    assert "Resource SKUs" in answer.error and "Features" in answer.error
    assert decide(_plan(), answer) == {s: False for s in SIZES}
    assert "could not check encryption at host" in person_lines(_plan(), answer)[0]
    assert decide(_plan(True), answer) == {s: True for s in SIZES}   # required: Azure decides


def test_false_opts_out_without_asking(monkeypatch):
    from reclaunch.providers.azure import host_encryption as he

    monkeypatch.setattr(he, "probe", lambda *a, **k: pytest.fail("asked Azure"))
    assert he.stack_config(_plan(False)) == {}
    assert not any("EncryptionAtHost" in ln for ln in he.prerequisites(_plan(False)))
    assert decide(_plan(False), None) == {s: False for s in SIZES}


def test_up_prints_azures_answer_and_hands_it_to_the_program(monkeypatch):
    from reclaunch.providers.azure import host_encryption as he
    from reclaunch.providers.azure.provider import provider

    answer = Probe(frozenset({"Standard_D4s_v5"}), True)
    monkeypatch.setattr(he, "probe", lambda plan, **k: answer)
    plan = _plan()
    env = provider(infra=object()).env()
    assert any("Standard_ND96amsr_A100_v4 does not support" in ln
               for ln in env.prerequisites(plan))
    assert json.loads(he.stack_config(plan)[KEY]) == {"Standard_D4s_v5": True,
                                                      "Standard_ND96amsr_A100_v4": False}


def test_plan_says_it_is_on_by_default_and_what_it_needs():
    from stacks import manual_prerequisites

    line = next(ln for ln in manual_prerequisites(_plan()) if "EncryptionAtHost" in ln)
    assert line.startswith("encryption at host is on by default")
    assert "must be Registered" in next(ln for ln in manual_prerequisites(_plan(True))
                                        if "EncryptionAtHost" in ln)


def test_preview_follows_the_resolved_answer_and_passes_policy(monkeypatch):
    from reclaunch.providers import preview_plan as preview
    from stacks.policy import check

    plan = _plan()
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps(
        {KEY: json.dumps({"Standard_D4s_v5": True, "Standard_ND96amsr_A100_v4": False})}))
    res = preview(plan)
    aks = next(r for r in res if r["type"] == "azure-native:containerservice:ManagedCluster")
    assert aks["inputs"]["agentPoolProfiles"][0]["enableEncryptionAtHost"] is True
    gpu = [r["inputs"] for r in res if r["type"] == "azure-native:containerservice:AgentPool"]
    assert gpu and all(i["enableEncryptionAtHost"] is False for i in gpu)
    assert check(plan, res) == []
    # A pool that differs from the answer is a finding.
    gpu[0]["enableEncryptionAtHost"] = True
    assert any("encryption at host on, expected off" in f for f in check(plan, res))
