"""A second `up` of a cloud: local job that already succeeded.

The trainer resumes from its last checkpoint, which after a finished run is the last step:
it would "train" 0 steps and report 0.0 samples/s. So `up` says the job already finished
and starts nothing, unless asked for a fresh start (`up --fresh`), which first removes the
run's checkpoints (only when they live under the cluster's own directory).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from reclaunch.errors import UsageError
from reclaunch.providers.local import proc as lp
from reclaunch.runtime.states import JobStatus


def finished_before(root: Path, old: dict[str, Any] | None, *, fresh: bool) -> JobStatus | None:
    """The status to return instead of starting, or None to go ahead (after --fresh cleanup).

    A run its teardown policy already took down (`make demo`'s: teardown.when on_completion)
    is a cluster that is gone, as on a cloud: the next `up` is a new one and trains from
    step 0, as --fresh would, when its checkpoints were the cluster's own (under its
    directory). Checkpoints that outlive the cluster (a bucket, a path of the user's) are
    the user's to keep or remove, so such a run still answers "already finished"."""
    if not old or old.get("state") != "Succeeded":
        return None
    name = root.name
    ckpt = (lp.read_json(root / "launch.json") or {}).get("env", {}).get("CHECKPOINT_DIR")
    own = isinstance(ckpt, str) and "://" not in ckpt and (
        not ckpt or Path(ckpt).resolve().is_relative_to(root.resolve()))
    if fresh or (old.get("torn_down") is True and own):
        if isinstance(ckpt, str) and "://" in ckpt:
            raise UsageError(f"--fresh: the checkpoints of {name} are in {ckpt}; `reclaunch down "
                             f"{name}` deletes them (or remove that prefix yourself)")
        if isinstance(ckpt, str) and ckpt:
            path = Path(ckpt).resolve()
            if not path.is_relative_to(root.resolve()):
                raise UsageError(f"--fresh: the checkpoints of {name} are in {path}, outside "
                                 f"{root}; remove them yourself to start over")
            shutil.rmtree(path, ignore_errors=True)
        for stale in ("result.json", "state.json"):
            (root / stale).unlink(missing_ok=True)
        return None
    done = (old.get("progress") or {}).get("done") or {}
    at = f" at step {done['step']}" if isinstance(done, dict) and "step" in done else ""
    msg = (f"{name} already finished (Succeeded{at}); nothing started. "
           f"`reclaunch up --fresh FILE` trains again from step 0, "
           f"`reclaunch down {name}` removes it")
    return JobStatus(name=name, cloud="local", state="Succeeded", message=msg,
                     details={"already_finished": True, "root": str(root),
                              "progress": old.get("progress") or {}})
