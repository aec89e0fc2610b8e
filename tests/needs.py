"""Skips that are honest: an input or extra may be missing on a user's clone, never under CI.

Under CI=true (how CI runs .ci/run) a missing input or module is a failure, so a renamed file
or a broken install cannot turn a check into a silent skip. Only `optional_module` may skip
under CI: for an extra the CI machine cannot install, with the reason printed by `-ra`.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

IN_CI = os.environ.get("CI") == "true"

# Inputs this repo has asked to be placed in ../shared/reference/catalog-sources/ (extracts of
# other projects' files, never committed here; a closing note names them) and that CI's copy of
# shared/ may not hold yet. Empty while nothing is requested (the four of 2026-12-01 are placed). Until placed, tests that re-derive rows from them
# skip even under CI, saying so; tests/test_needs.py fails once one is placed, so this list
# shrinks instead of hiding a check forever.
PENDING_INPUTS: frozenset[str] = frozenset()


def need_input(path: Path, what: str) -> Path:
    """An input from outside the repo (../shared beside the checkout). A user's clone may lack
    it and skips; CI lays it beside the clone, so there its absence is a failure, not a skip
    (except for a PENDING_INPUTS file, which skips with that reason)."""
    if not path.exists():
        if path.name in PENDING_INPUTS:
            pytest.skip(f"{path.name} is requested for ../shared/reference/catalog-sources and "
                        f"not placed yet: {what} skipped", allow_module_level=True)
        if IN_CI:
            pytest.fail(f"{path} is absent under CI=true: {what} cannot run", pytrace=False)
        pytest.skip(f"{path} is absent (../shared not beside the checkout): {what} skipped",
                    allow_module_level=True)
    return path


def need_module(name: str, extra: str):
    """A module the repo's own install provides (`make test` installs every extra). Missing on
    a partial install: skip, naming the extra; under CI=true it is a broken install: fail."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        if IN_CI:
            pytest.fail(f"{name} is not importable under CI=true ({e}); `make test` installs "
                        f"it with the [{extra}] extra", pytrace=False)
        pytest.skip(f"{name} not installed (pip install '.[{extra}]')", allow_module_level=True)


def optional_module(name: str, why: str):
    """An optional extra that is not part of `make test` (pyarrow): skip everywhere, with why."""
    try:
        return importlib.import_module(name)
    except ImportError:
        pytest.skip(f"{name} not installed: {why}", allow_module_level=True)
