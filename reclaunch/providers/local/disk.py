"""A full disk under $RECLAUNCH_HOME, said in one line: which device, and what was kept."""

from __future__ import annotations

import sys
from pathlib import Path


def no_space(path: Path) -> str:
    """'no space left on DEVICE (mounted at M)' for the file system that holds `path`."""
    best = ("?", "/")
    try:
        target = str(Path(path).resolve())
        for line in Path("/proc/self/mounts").read_text().splitlines():
            dev, mnt = (line.split() + ["", ""])[:2]
            if (target == mnt or target.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best[1]):
                best = (dev, mnt)
    except OSError:
        pass
    return f"no space left on {best[0]} (mounted at {best[1]}, which holds {path})"


def say(line: str) -> None:
    try:
        print(line, file=sys.stderr, flush=True)
    except OSError:   # supervisor.log is on the same full disk
        pass


