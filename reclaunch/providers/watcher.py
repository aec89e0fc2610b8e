"""The detached watcher: `up --detach` leaves this process following the job to its end and
tearing the cluster down per `teardown.when`, after the terminal that started it is gone.

    python -m reclaunch.providers.watcher watch NAME [--backend URL]

One per cluster (a pid file under $RECLAUNCH_HOME/watch); its log is beside it, owner-only.
It ends when the job does, or when its journal (or the whole home) is removed: nothing is left
to record or watch then (lifecycle.watch_job checks before each poll).
"""

from __future__ import annotations

import os
import subprocess
import sys


def pid_file(name: str):
    from reclaunch.home import private_dir
    return private_dir("watch") / f"{name}.pid"


def watcher_pid(name: str) -> int | None:
    """The running watcher's pid, or None (a stale pid file is removed)."""
    f = pid_file(name)
    try:
        pid = int(f.read_text().strip())
        os.kill(pid, 0)
        return pid
    except (FileNotFoundError, ValueError, ProcessLookupError):
        f.unlink(missing_ok=True)
        return None
    except PermissionError:
        return pid


def spawn_watcher(name: str, backend: str | None = None) -> int:
    """Start `watch NAME` in a new session that outlives this terminal; one per cluster."""
    running = watcher_pid(name)
    if running:
        return running
    from reclaunch.home import private_dir
    from reclaunch.runtime.journal import Journal
    log = open(os.open(private_dir("watch") / f"{name}.log",   # owner-only, like all of home
                       os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab")
    cmd = [sys.executable, "-m", "reclaunch.providers.watcher", "watch", name]
    env = os.environ.copy()
    if backend:   # in its environment (owner-only in /proc), never on its command line (`ps`)
        env["RECLAUNCH_BACKEND"] = backend
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True, env=env)
    pid_file(name).write_text(str(proc.pid))
    Journal(name).write("watcher", "info", pid=proc.pid, message=f"detached watcher pid {proc.pid}")
    return proc.pid


def main(argv: list[str] | None = None) -> int:
    import argparse

    from reclaunch.errors import ReclaunchError
    from reclaunch.runtime.journal import Journal
    from reclaunch.providers import get
    p = argparse.ArgumentParser(prog="reclaunch-watch")
    p.add_argument("verb", choices=["watch"])
    p.add_argument("name")
    p.add_argument("--backend")
    a = p.parse_args(argv)
    pid_file(a.name).write_text(str(os.getpid()))
    try:
        provider = get(Journal(a.name).record().cloud)
        st = provider.watch(a.name, backend=a.backend)
        print(f"{a.name}: {st.state} {st.message}", flush=True)
        return 0
    except ReclaunchError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return exc.exit_code
    finally:   # the path, never created again: a removed home stays removed
        from reclaunch.home import root
        (root() / "watch" / f"{a.name}.pid").unlink(missing_ok=True)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
