"""`reclaunch down NAME` for cloud: local: stop what runs, then delete what it left.

Nothing is signalled on the word of a pid alone: the supervisor only when its start time
still matches the one it recorded (ident.py), its processes by the run marker in their
environment, and whatever it had adopted (a job that daemonized with setsid and a clean
environment) by a snapshot of its descendants taken before it is asked to stop. Deleting
logs and checkpoints needs --yes, or a yes typed on a terminal: the same rule as clouds.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

from reclaunch.errors import ProviderError, UsageError
from reclaunch.providers.local import ident
from reclaunch.providers.local import proc as lp


def confirm(name: str, root: Path, yes: bool, keep_storage: bool) -> bool:
    if yes:
        return True
    outside = _outside(root)
    what = "its logs" if keep_storage or outside else "its logs and checkpoints"
    kept = f"; keep the checkpoints in {outside}" if outside else ""
    store = _store(root)
    if store and not keep_storage:   # name what goes from the bucket, never just "checkpoints"
        from reclaunch.providers.local import bucket
        what += f", {bucket.describe(store, root)}"
    if not sys.stdin.isatty():
        raise UsageError(f"down {name}: would stop its processes and delete {what} ({root}){kept}; "
                         "refusing without confirmation on a non-interactive terminal",
                         hint="pass --yes")
    from rich.prompt import Confirm

    from reclaunch.ui.console import console
    from rich.markup import escape
    return Confirm.ask(escape(f"Stop {name} and delete {what} ({root}){kept}?"),
                       console=console(stderr=True), default=False)


def _outside(root: Path) -> Path | None:
    """The checkpoint directory when it is not under `root` (job.checkpoint.path an absolute
    path of the user's): `down` never deletes it, so it names it. None with a bucket."""
    if _store(root):
        return None
    ckpt = (lp.read_json(root / "launch.json") or {}).get("env", {}).get("CHECKPOINT_DIR")
    if not isinstance(ckpt, str) or not ckpt:
        return None
    path = Path(os.path.normpath(ckpt))
    return None if path.is_relative_to(root) or not path.exists() else path


def _store(root: Path) -> dict | None:
    """launch.json's "bucket" entry, else the bucket `up` created before it stopped
    (bucket.py); None: checkpoints on disk."""
    from reclaunch.providers.local import bucket

    store = (lp.read_json(root / "launch.json") or {}).get("bucket")
    if isinstance(store, dict) and isinstance(store.get("bucket"), str):
        return store
    return bucket.created_by(root)


def stop(name: str, state: dict, grace: float) -> list[int]:
    """Stop the supervisor (verified), then every process of the run; -> pids left alive."""
    adopted: dict[int, str] = recorded(state)   # the supervisor may be dead (SIGKILL)
    if lp.supervisor_alive(state):
        sup = state["supervisor_pid"]
        sup_id = state.get("supervisor_id") or ident.identity(sup)
        adopted.update(ident.descendants(sup))
        ident.signal_verified({sup: sup_id}, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and ident.alive_as(sup, sup_id):
            time.sleep(0.1)
        adopted[sup] = sup_id   # still there after the grace: it goes with the rest
    left = lp.kill_marked(lp.MARKER, lp.run_marker(name), 5.0, also=adopted)
    # Verify from scratch: marker scan plus every identity we knew about.
    return sorted(set(left) | {p for p, i in adopted.items() if ident.alive_as(p, i)}
                  | set(lp.run_pids(name)))


def recorded(state: dict) -> dict[int, str]:
    """state.json["procs"]: every process the supervisor had, by identity (pid + start time
    + boot id): each is signalled only while it is still that process (ident.alive_as)."""
    procs = state.get("procs")
    if not isinstance(procs, dict):
        return {}
    out = {}
    for pid, who in list(procs.items())[:4096]:
        if isinstance(pid, str) and pid.isdigit() and 0 < int(pid) < 2**22 \
                and isinstance(who, str) and ":" in who:
            out[int(pid)] = who
    return out


def down(root: Path, name: str, *, keep_storage: bool = False, grace: float = 15.0,
         yes: bool = False) -> None:
    if not confirm(name, root, yes, keep_storage):
        print(f"{name}: nothing stopped, nothing deleted", file=sys.stderr)
        return
    state = lp.read_json(root / "state.json") or {}
    left = stop(name, state, grace)
    if left:
        raise ProviderError(f"could not stop processes {left} of local cluster {name!r}; "
                            "nothing was deleted", hint=f"see `ps -o pid,cmd -p "
                            f"{','.join(map(str, left))}`, then rerun `reclaunch down {name}`")
    stopped = "no process left (checked by run marker)" + (
        f", port {state['port']} freed" if state.get("port") else "")
    outside = _outside(root)
    kept = f"; kept the checkpoints in {outside} (outside {root}: yours to delete)" if outside else ""
    store = _store(root)
    if store:   # checkpoints in S3 (bucket.py)
        from reclaunch.providers.local import bucket
        if keep_storage:
            print(f"{name}: kept s3://{store['bucket']}/{store.get('prefix', '')}")
        else:
            print(f"{name}: {bucket.delete(store, root)}")
    if keep_storage:
        keep = {"data", "bucket.json"}   # bucket.json: the bucket `up` created stays ours
        ckpt = (lp.read_json(root / "launch.json") or {}).get("env", {}).get("CHECKPOINT_DIR")
        if isinstance(ckpt, str) and Path(ckpt).parent == root:
            keep.add(Path(ckpt).name)
        for child in root.iterdir():
            if child.name not in keep:
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        print(f"{name}: {stopped}; deleted logs and state, kept {', '.join(sorted(keep))} in {root}{kept}")
    else:
        shutil.rmtree(root, ignore_errors=True)
        print(f"{name}: {stopped}; deleted {root} (logs, {'' if outside else 'checkpoints, '}data){kept}"
              + ("" if not root.exists() else f"; {root} is still there"))
    try:  # the CLI finds clusters by their journal (reclaunch.runtime.journal)
        from reclaunch.runtime.journal import Journal

        Journal(name).path.unlink(missing_ok=True)
    except Exception:  # pragma: no cover - the journal is lifecycle's; never block down
        pass
