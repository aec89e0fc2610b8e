"""`reclaunch preview` runs the stack policies on the user's spec, not only the tests do."""

from __future__ import annotations

import json

from click.testing import CliRunner

from reclaunch.cli import cli
from tests.conftest import EXAMPLES

AWS = str(EXAMPLES / "aws-deepfm-p4d.yaml")


def test_preview_json_carries_the_policy_findings():
    res = CliRunner().invoke(cli, ["preview", AWS, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["policy"] == [] and out["resources"] and out["schedule"]


def test_a_policy_finding_is_printed_and_exits_1(monkeypatch):
    import stacks.policy as policy

    monkeypatch.setitem(policy.POLICIES, "planted", lambda plan, rs: ["[red]x[/red] finding"])
    res = CliRunner().invoke(cli, ["preview", AWS])
    assert res.exit_code == 1
    assert "1 finding(s)" in res.output and "planted: [red]x[/red] finding" in res.output
