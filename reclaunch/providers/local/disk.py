"""What the supervisor leaves behind for the worst case: a full disk under $RECLAUNCH_HOME
said in one line (which device, what was kept), and the identities of every process it had,
so `down` still stops a job's setsid daemon after the supervisor itself was SIGKILLed."""

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




def recorded_procs() -> dict[str, str]:
    """{pid: identity} of this process's descendants (it is a child subreaper: a daemon that
    left with setsid and a clean environment is still one), for state.json["procs"]."""
    import os

    from reclaunch.providers.local.ident import descendants
    return {str(p): i for p, i in sorted(descendants(os.getpid()).items())[:4096]}


def tighten(root: Path, limit: int = 20_000) -> int:
    """Owner-only modes for what the job wrote under the run's directory (the trainer makes
    its checkpoints 0644 for pods of another uid; here there is only this user): group and
    other bits cleared on every file and directory, links never followed. -> entries fixed."""
    import os
    import stat

    fixed = 0
    for n, (dirpath, dirnames, filenames) in enumerate(os.walk(root, followlinks=False)):
        for name in [*dirnames, *filenames]:
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
                if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o077:
                    os.chmod(path, stat.S_IMODE(st.st_mode) & 0o700)
                    fixed += 1
            except OSError:
                continue
        if n >= limit:
            break
    return fixed


def become_subreaper() -> None:
    """Adopt orphaned workers (their agent was SIGKILLed) so they are reaped here, not by init."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):  # not Linux: the environment marker still finds them
        pass
