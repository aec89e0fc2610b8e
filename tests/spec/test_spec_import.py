"""Importing reclaunch.spec (issue 25, start-up time): the spec models are built with pydantic's
plugins off, and nothing of that reaches user code or child processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CODE = """
import json, os, sys
import pydantic.plugin._loader as loader
from reclaunch.spec import load_spec
load_spec("examples/aws-deepfm-p4d.yaml")
out = {"env": os.environ.get("PYDANTIC_DISABLE_PLUGINS"), "scanned_for_spec": loader._plugins is not None,
       "difflib": "difflib" in sys.modules}
import pydantic
class Users(pydantic.BaseModel):   # a model of the user's own, built after ours
    x: int
out["scanned_for_user"] = loader._plugins is not None
print(json.dumps(out))
"""


def _run(env_value: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    if env_value is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = env_value
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120,
                         cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("before", [None, "logfire"])
def test_plugins_off_for_spec_models_only(before):
    got = _run(before)
    assert got["env"] == before                 # the environment is as it was (child processes)
    assert not got["scanned_for_spec"]          # no entry-point scan for the spec's models
    assert got["scanned_for_user"]              # a user's model still gets pydantic's plugins
    assert not got["difflib"]                   # a valid spec needs no "did you mean"
