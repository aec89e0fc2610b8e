"""Every RECLAUNCH_* variable a person sets to pin a value, checked once when the CLI starts.

Each pin is read where it is used (reclaunch/host.py, runtime/deadline.py, runtime/backend.py),
so a malformed one surfaced only in the command that happened to read it, or (the SDK
timeouts) fell back silently. `reclaunch` checks them all before any command runs and stops
with one line naming every bad variable, exit 2.
"""

from __future__ import annotations

import os
from typing import Callable

# Numeric pins of runtime/deadline.py (sdk_limits, call_deadline): variable -> (low, high,
# whole number).
SDK_PINS: dict[str, tuple[float, float, bool]] = {
    "RECLAUNCH_SDK_CONNECT_TIMEOUT": (0.1, 120, False),
    "RECLAUNCH_SDK_READ_TIMEOUT": (0.1, 600, False),
    "RECLAUNCH_SDK_ATTEMPTS": (1, 10, True),
    "RECLAUNCH_SDK_CALL_TIMEOUT": (0.1, 3600, False),
}


def _number(var: str, lo: float, hi: float, whole: bool) -> str | None:
    raw = os.environ.get(var)
    if raw is None or not raw.strip():
        return None
    what = "a whole number" if whole else "a number of seconds"
    try:
        v = int(raw) if whole else float(raw)
    except ValueError:
        v = None
    if v is None or v != v or not lo <= v <= hi:
        return f"{var}={raw!r}: must be {what} from {lo:g} to {hi:g}"
    return None


# Variable -> (module, function, arguments) that reads it and raises UsageError on a bad
# value. Named here, not read from host.MEMORY_VAR and backend.SECRETS_ENV, so a module is
# imported only when its variable is set: RECLAUNCH_HOME alone (tests, a moved home) imported
# both on every command (tests/cli/test_cli_startup_imports.py holds the names to theirs).
READERS: dict[str, tuple[str, str, tuple]] = {
    "RECLAUNCH_HOST_MEMORY": ("reclaunch.host", "ram_bytes", ()),
    "RECLAUNCH_HOST_CPUS": ("reclaunch.host", "cpu_count", ()),
    "RECLAUNCH_TODAY": ("reclaunch.host", "today", ()),
    "RECLAUNCH_HOST_LOAD": ("reclaunch.host", "load_per_core", ()),
    "RECLAUNCH_SECRETS_PROVIDER": ("reclaunch.runtime.backend", "secrets_provider", (None,)),
}


def _readers() -> dict[str, Callable[[], object]]:
    """variable -> the function that reads it (and raises UsageError on a bad value)."""
    import importlib

    def reader(module: str, name: str, args: tuple) -> Callable[[], object]:
        return lambda: getattr(importlib.import_module(module), name)(*args)

    return {var: reader(*where) for var, where in READERS.items()}


def problems() -> list[str]:
    from reclaunch.errors import ReclaunchError

    out = [p for var, (lo, hi, whole) in SDK_PINS.items() if (p := _number(var, lo, hi, whole))]
    if not any(k.startswith("RECLAUNCH_") for k in os.environ):
        return out      # nothing pinned: nothing more to import or read
    for var, read in _readers().items():
        if os.environ.get(var):
            try:
                read()
            except ReclaunchError as exc:
                out.append(exc.message)
    return out


def check() -> None:
    """UsageError (exit 2) naming every malformed pin, in one line."""
    found = problems()
    if found:
        from reclaunch.errors import UsageError

        raise UsageError("; ".join(found), hint="fix or unset the variable")
