"""examples/trainer is a script directory, not a package: put it (and our helpers) on sys.path."""
import sys
from pathlib import Path

import pytest
from tests.needs import need_module

need_module("torch", "local")
need_module("numpy", "local")

for _p in (Path(__file__).resolve().parents[2] / "examples" / "trainer", Path(__file__).resolve().parent):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))
