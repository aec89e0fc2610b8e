"""Sharded checkpoints with torch.distributed.checkpoint (DCP): step-<N>/ directories.

Every rank writes its own shards (a table lives only on the ranks the plan put it on), so
no rank ever gathers a 100 GB table. Atomicity, as for the single-file checkpoints
(checkpoint.py): DCP writes into `.step-<N>.tmp/`; after `dcp.save` returns on every rank
(it ends with a collective "finish" step on the coordinator), rank 0 writes `meta.json`
(step, config, world size, sharding, file sizes) into it and os.rename()s the directory onto
`step-<N>` (atomic on POSIX, Lustre, EFS, Filestore). Readers only look at final names and
check meta.json's file sizes, so a writer killed mid-save never yields a torn checkpoint.
DCP needs CHECKPOINT_DIR on storage every rank sees (reclaunch's shared storage; on
`cloud: local` one directory).

Periodic saves go in the background (`background=True`, dcp.async_save): the state is staged
to host memory, the step loop continues, and the write runs on a thread over a gloo group
(async_save needs a CPU backend; NCCL jobs get a gloo side group). When rank 0's future
completes, DCP's finish step has gathered every rank's write result, so rank 0 commits
(meta.json + rename) from the done-callback. A killed writer leaves only `.step-N.tmp`, which
the next start removes. The next save, the SIGTERM save and the exit wait for a pending one.
"""
from __future__ import annotations

import concurrent.futures
import json
import os
import re
import shutil

import torch.distributed as dist
import torch.distributed.checkpoint as dcp

import checkpoint

_NAME = re.compile(r"^step-(\d+)$")
META = "meta.json"
_pending = {"future": None, "group": None}


def path_for(directory: str, step: int) -> str:
    return os.path.join(directory, f"step-{step:010d}")


def _sizes(path: str) -> dict[str, int]:
    return {n: os.path.getsize(os.path.join(path, n)) for n in sorted(os.listdir(path)) if n != META}


def _barrier() -> None:
    if dist.is_initialized():
        dist.barrier()


def is_pending() -> bool:
    return _pending["future"] is not None


def wait_pending() -> None:
    """Block until a background save (and its commit) has finished; re-raise its error."""
    fut, _pending["future"] = _pending["future"], None
    if fut is not None:
        fut.result()


def _commit(directory: str, tmp: str, final: str, step: int, meta: dict, keep: int) -> None:
    doc = {**meta, "step": step, "files": _sizes(tmp)}
    checkpoint.atomic_write_bytes(os.path.join(tmp, META), (json.dumps(doc, indent=1) + "\n").encode())
    os.rename(tmp, final)
    checkpoint._fsync_dir(directory)
    prune(directory, keep)


def _cpu_group():
    """async_save needs a process group with a CPU backend: the default one if it has it."""
    if not dist.is_initialized():
        return None
    default = dist.group.WORLD
    if dist.get_backend(default) == "gloo":
        return default
    if _pending["group"] is None:
        _pending["group"] = dist.new_group(backend="gloo")   # collective: every rank saves together
    return _pending["group"]


def save(directory: str, step: int, state: dict, meta: dict, keep: int, is_main: bool,
         background: bool = False) -> str:
    wait_pending()
    final = path_for(directory, step)
    tmp = os.path.join(directory, f".step-{step:010d}.tmp")
    if is_main:
        os.makedirs(directory, exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
        if os.path.isdir(final):         # same step saved before (a rerun of a finished job)
            shutil.rmtree(final)
    _barrier()
    fut = None
    if background and hasattr(dcp, "async_save") and not _pending.get("sync_only"):
        try:
            fut = dcp.async_save(state, checkpoint_id=tmp, process_group=_cpu_group())
        except RuntimeError as exc:
            # torch 2.11's DefaultStager deep-copies tensors with data_ptr(), which TorchRec's
            # ShardedTensor does not implement: staging fails before anything is written (the
            # same on every rank). Save synchronously from now on, and say so once.
            _pending["sync_only"] = True
            if is_main:
                print(f"info checkpoint_async=off reason='dcp.async_save cannot stage this state "
                      f"({str(exc).splitlines()[0][:120]}); periodic checkpoints are synchronous'", flush=True)
    if fut is not None:
        fut = getattr(fut, "upload_completion", fut)     # AsyncSaveResponse (newer torch) or Future
        if is_main:
            done = concurrent.futures.Future()

            def commit(f) -> None:
                try:
                    f.result()
                    _commit(directory, tmp, final, step, meta, keep)
                    done.set_result(final)
                except BaseException as exc:  # surfaced by wait_pending()
                    done.set_exception(exc)
            fut.add_done_callback(commit)
            fut = done
        _pending["future"] = fut
        return final
    dcp.save(state, checkpoint_id=tmp)
    _barrier()
    if is_main:
        _commit(directory, tmp, final, step, meta, keep)
    _barrier()
    return final


def list_checkpoints(directory: str) -> list[tuple[int, str]]:
    if not directory or not os.path.isdir(directory):
        return []
    return sorted((int(m.group(1)), os.path.join(directory, n))
                  for n in os.listdir(directory) if (m := _NAME.match(n)))


def verify(path: str) -> dict:
    with open(os.path.join(path, META)) as f:
        meta = json.load(f)
    files = meta.get("files") or {}
    if not files or _sizes(path) != files:
        raise checkpoint.CorruptCheckpoint(f"{path}: files differ from meta.json (truncated or partial)")
    return meta


def latest(directory: str, is_main: bool, log=print) -> tuple[str, dict] | None:
    """Rank 0 picks the newest checkpoint that verifies and tells the others (a broadcast,
    so every rank loads the same one even if a newer one appears meanwhile)."""
    found = None
    if is_main and directory:
        for tmp in (n for n in os.listdir(directory) if n.startswith(".step-")) if os.path.isdir(directory) else ():
            shutil.rmtree(os.path.join(directory, tmp), ignore_errors=True)   # a killed writer's leftovers
        for _, path in reversed(list_checkpoints(directory)):
            try:
                found = (path, verify(path))
                break
            except Exception as exc:  # corrupt, partial, unreadable: fall back to an older one
                log(f"warn skipping_checkpoint={path} reason={type(exc).__name__}:{exc}")
    if dist.is_initialized():
        box = [found]
        dist.broadcast_object_list(box, src=0)
        found = box[0]
    return found


def load(path: str, state: dict) -> None:
    dcp.load(state, checkpoint_id=path)


def prune(directory: str, keep: int) -> None:
    if keep <= 0:
        return
    for _, path in list_checkpoints(directory)[:-keep]:
        shutil.rmtree(path, ignore_errors=True)
