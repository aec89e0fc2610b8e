"""One cluster name, one mutating command at a time.

`up`, `down` and `preempt` take an exclusive lock on `$RECLAUNCH_HOME/locks/<name>.lock`
before they change anything. A second caller does not wait: it gets "busy" (exit 1) naming
the holder, and nothing starts. flock(2) is released by the kernel when the holder exits,
however it exits (kill -9 included), so a crash never leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
from reclaunch.errors import ReclaunchError


class BusyError(ReclaunchError):
    """Another reclaunch command is changing this cluster right now."""

    exit_code = 1


def _path(name: str):
    from reclaunch.home import private_dir
    return private_dir("locks") / f"{name}.lock"


class cluster_lock:
    """`with cluster_lock(name, "up"):` — or acquire(), then release() (idempotent) as soon
    as the mutating part is over."""

    def __init__(self, name: str, verb: str):
        self.name, self.verb, self.fd = name, verb, None

    def acquire(self) -> "cluster_lock":
        fd = os.open(_path(self.name), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another command"
            os.close(fd)
            raise BusyError(f"cluster {self.name!r} is busy: {holder} is changing it; "
                            "nothing was started", hint="wait for it to finish; `reclaunch "
                            f"status {self.name}` shows where it is") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"`reclaunch {self.verb}` (pid {os.getpid()})".encode(), 0)
        self.fd = fd
        return self

    def release(self, *_: object) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)   # closing the descriptor releases the lock

    def __enter__(self) -> "cluster_lock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def held(name: str) -> bool:
    """True while some process holds the lock of `name` (tests, and `status`)."""
    fd = os.open(_path(name), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
