"""Pulumi programs, one package per cloud, each exposing `program(plan)`.

The registry maps a cloud to its program module; nothing else branches on the cloud name.
Importing this package imports no Pulumi SDK: each program requires its SDK when it runs.
"""

from __future__ import annotations

import importlib
from typing import Callable

PROGRAMS: dict[str, str] = {
    "aws": "stacks.aws.program",
    "azure": "stacks.azure.program",
    "gcp": "stacks.gcp.program",
}

# The pip extra that brings each cloud's Pulumi SDK (reclaunch.errors.require names it).
EXTRAS: dict[str, str] = {"aws": "aws", "azure": "azure", "gcp": "gcp"}


def load_program(cloud: str) -> Callable:
    """`program(plan)` for a cloud; a ValueError names the clouds that have one."""
    try:
        module = PROGRAMS[cloud]
    except KeyError:
        raise ValueError(f"no Pulumi program for cloud {cloud!r} "
                         f"(have: {', '.join(sorted(PROGRAMS))})") from None
    return importlib.import_module(module).program
