"""What `validate` and `plan` import (issue 25: start-up time). A guard on the import set,
not a timed test: each module named here cost `plan` measurable start-up time once.
Numbers: bench/bench_startup.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SDKS = ("pulumi", "boto3", "botocore", "kubernetes", "torch", "azure", "google", "jsonschema")
NEVER_ON_PLAN = (
    "reclaunch.manifests", "reclaunch.runtime.infra", "reclaunch.runtime.lifecycle",
    "reclaunch.runtime.preview", "reclaunch.runtime.kube", "reclaunch.catalog.refresh",
    "reclaunch.catalog.build_catalog", "reclaunch.providers.kubecloud", "stacks.versions",
    "reclaunch.providers.aws.catalog_rows",
    "importlib.readers",       # data files are read as plain files (importlib.resources: zip only)
    "rich._emoji_codes",       # consoles run with emoji=False
)


def loaded(*argv: str) -> set[str]:
    code = ("import json, sys\nfrom reclaunch.cli import main\ntry:\n    main(%r)\n"
            "except SystemExit:\n    pass\nsys.stderr.write('\\nMODULES ' + json.dumps(sorted(sys.modules)))"
            % (list(argv),))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    tail = out.stderr.rsplit("MODULES ", 1)
    assert len(tail) == 2, out.stderr
    return set(json.loads(tail[1]))


def _hits(mods: set[str], prefixes) -> list[str]:
    return sorted(m for m in mods if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_validate_imports_no_planner_fabric_stacks_or_rich():
    mods = loaded("validate", "examples/aws-deepfm-p4d.yaml")
    assert not _hits(mods, ("reclaunch.planner", "reclaunch.fabric", "stacks", "rich", *SDKS))


@pytest.mark.parametrize("example, cloud", [("aws-deepfm-p4d.yaml", "aws"),
                                            ("azure-din-nd96amsr.yaml", "azure")])
def test_plan_imports_only_what_it_shows(example, cloud):
    mods = loaded("plan", f"examples/{example}")
    assert "reclaunch.planner.core" in mods and "reclaunch.ui.grid" in mods   # the guard sees the path
    # The text is laid out by ui/grid.py: rich's import and table layout are start-up cost.
    assert not _hits(mods, ("rich", *SDKS, *NEVER_ON_PLAN))
    # The "needs a person" list reads the spec's own cloud's stack facts, never a program.
    others = [f"stacks.{c}" for c in ("aws", "azure", "gcp") if c != cloud]
    assert not _hits(mods, (*others, f"stacks.{cloud}.program"))


def test_plan_compare_imports_no_rich():
    mods = loaded("plan", "examples/aws-deepfm-p4d.yaml", "--compare", "--regions", "eu-south-2")
    assert "reclaunch.ui.grid" in mods and not _hits(mods, ("rich", *SDKS, *NEVER_ON_PLAN))


def test_plan_json_imports_no_rich():
    mods = loaded("plan", "examples/aws-deepfm-p4d.yaml", "--json")
    assert not _hits(mods, ("rich", "stacks", *SDKS, *NEVER_ON_PLAN))
