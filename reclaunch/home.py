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


class DamagedState(ReclaunchError):
    """A state file that cannot be what reclaunch wrote (a FIFO, a device, far too big)."""


def read_state_file(path: Path, limit: int) -> bytes | None:
    """The bytes of a state file under the home, read bounded and without blocking: None when
    it is missing; DamagedState naming it when it is not a regular file (a FIFO would hang the
    reader, a link to /dev/zero never ends) or is over `limit` bytes."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise DamagedState(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise DamagedState(f"{path} is damaged: not a regular file",
                               hint="remove it (reclaunch only ever writes regular files there)")
        data = os.read(fd, limit + 1) if st.st_size <= limit else b"x" * (limit + 1)
        while len(data) <= limit and (more := os.read(fd, limit + 1 - len(data))):
            data += more
        if len(data) > limit:
            raise DamagedState(f"{path} is damaged: over {limit // 2**20} MiB",
                               hint="remove it or move it away")
        return data
    except OSError as exc:
        raise DamagedState(f"cannot read {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
