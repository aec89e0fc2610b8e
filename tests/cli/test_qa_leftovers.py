"""Leftovers from the last QA review: each a one-line usage error (exit 2) or a note said once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPEC = "examples/aws-deepfm-p4d.yaml"
CLOSED = "http://127.0.0.1:9"


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("AWS_", "AZURE_", "ARM_", "GOOGLE_", "RECLAUNCH_SDK_"))}
    e.update(RECLAUNCH_HOME=str(tmp_path / "home"), HOME=str(tmp_path), COLUMNS="200",
             AWS_EC2_METADATA_DISABLED="true", AWS_ENDPOINT_URL=CLOSED)
    e.pop("RECLAUNCH_TODAY", None)
    return e


def run(env, *args):
    return subprocess.run([sys.executable, "-m", "reclaunch", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def one_line(proc, code: int, *needles: str) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


@pytest.mark.parametrize("value", [",", " , ", "us-east-1,,eastus", ""])
def test_empty_regions_list_is_a_usage_error_not_every_region(env, value):
    one_line(run(env, "plan", SPEC, "--compare", "--regions", value), 2, "--regions", "empty")


def test_unknown_region_names_the_option_it_came_from(env):
    line = one_line(run(env, "plan", SPEC, "--compare", "--regions", "nowhere"), 2, "'nowhere'")
    assert line.startswith("error: --regions 'nowhere'"), line
    line = one_line(run(env, "plan", SPEC, "--compare", "--region", "nowhere"), 2)
    assert line.startswith("error: --region 'nowhere'"), line


def test_fewest_nodes_is_said_once():
    from reclaunch.catalog import load_catalog
    from reclaunch.planner import compare
    from reclaunch.spec import load_spec
    from reclaunch.ui.plan import render_compare

    cat = load_catalog()
    for name in ("aws-deepfm-p4d.yaml", "aws-auto-h100.yaml"):
        rows = compare(load_spec(str(ROOT / "examples" / name)), cat, regions=["eu-south-2"])
        assert any(r.sizing == "fewest" for r in rows[:10]), name
        text = render_compare(rows, width=200)
        assert text.count("fewest") == 1, text
        mixed = len({r.sizing for r in rows[:10]}) > 1
        assert ("the others the spec's GPU count" in text) is mixed, text
        assert text.count("*") == (sum(r.sizing == "fewest" for r in rows[:10]) + 1
                                   if mixed else 0), text


@pytest.mark.parametrize("var, value, needle", [
    ("RECLAUNCH_TODAY", "tomorrow", "RECLAUNCH_TODAY='tomorrow'"),
    ("RECLAUNCH_HOST_CPUS", "0", "RECLAUNCH_HOST_CPUS='0'"),
    ("RECLAUNCH_HOST_MEMORY", "lots", "RECLAUNCH_HOST_MEMORY='lots'"),
    ("RECLAUNCH_SDK_ATTEMPTS", "3.5", "RECLAUNCH_SDK_ATTEMPTS='3.5'"),
    ("RECLAUNCH_SDK_READ_TIMEOUT", "nan", "RECLAUNCH_SDK_READ_TIMEOUT='nan'"),
    ("RECLAUNCH_SDK_CONNECT_TIMEOUT", "1e9", "RECLAUNCH_SDK_CONNECT_TIMEOUT='1e9'"),
    ("RECLAUNCH_SECRETS_PROVIDER", "vault://x", "RECLAUNCH_SECRETS_PROVIDER=vault://x"),
])
def test_bad_env_pin_stops_every_command_at_start(env, var, value, needle):
    # `validate` reads none of these pins itself: the check at start is what stops it.
    env[var] = value
    one_line(run(env, "validate", SPEC), 2, needle)


def test_all_bad_pins_in_one_line_and_good_pins_pass(env):
    env.update(RECLAUNCH_TODAY="2026-13-01", RECLAUNCH_SDK_ATTEMPTS="0")
    one_line(run(env, "validate", SPEC), 2, "RECLAUNCH_TODAY", "RECLAUNCH_SDK_ATTEMPTS")
    env.update(RECLAUNCH_TODAY="2026-06-01", RECLAUNCH_SDK_ATTEMPTS="2",
               RECLAUNCH_HOST_MEMORY="16GiB", RECLAUNCH_HOST_CPUS="4",
               RECLAUNCH_SDK_READ_TIMEOUT="2.5")
    assert run(env, "validate", SPEC).returncode == 0


@pytest.mark.parametrize("cloud, region, close", [("aws", "us-east-7", "us-east-"),
                                                  ("azure", "eastus9", "eastus"),
                                                  ("gcp", "nowhere", None)])
def test_gc_checks_the_region_before_any_credential(env, cloud, region, close):
    # No credentials at all: a credential check first would exit 1 with "credentials".
    line = one_line(run(env, "gc", "--cloud", cloud, "--region", region), 2,
                    f"gc --region '{region}'", f"no {cloud} offer in that region")
    assert ("did you mean" in line) is (close is not None), line
