"""`$RECLAUNCH_HOME` (default ~/.reclaunch): the one place it is resolved.

Everything reclaunch keeps for a user lives under it: Pulumi state and its passphrase, the
journal, the price overlay, local runs with their logs and checkpoints. It holds secrets, so
every directory is created owner-only (0700) and re-tightened if it exists looser.
"""

from __future__ import annotations

import os
from pathlib import Path

from reclaunch.errors import ReclaunchError


def root() -> Path:
    """The home directory path (not created)."""
    return Path(os.environ.get("RECLAUNCH_HOME") or Path.home() / ".reclaunch").expanduser()


def reclaunch_home() -> Path:
    """The home directory, created owner-only."""
    home = root()
    _mkdir(home)
    return home


def private_dir(*parts: str) -> Path:
    """`$RECLAUNCH_HOME/<parts...>`, each level created owner-only."""
    d = reclaunch_home()
    for p in parts:
        d = d / p
        _mkdir(d)
    return d


def _mkdir(d: Path) -> None:
    try:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        if d.stat().st_mode & 0o077:
            d.chmod(0o700)
    except OSError as exc:  # a file in the way, a read-only disk: say which setting to fix
        raise ReclaunchError(f"cannot use {d} for reclaunch state: {exc.strerror or exc}",
                             hint="set RECLAUNCH_HOME to a writable directory") from None
