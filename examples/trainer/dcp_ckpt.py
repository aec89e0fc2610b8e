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

CHECKPOINT_DIR may be a bucket URL (s3://, gs://, az://): DCP then writes through fsspec
(FsspecWriter/FsspecReader) straight into `step-<N>/`, and meta.json, written last by rank 0
after every rank's shards are uploaded, is the marker (store.py): a step without it, or whose
objects differ from the sizes it lists, is never resumed from and is deleted at the next start.
"""
from __future__ import annotations

import concurrent.futures
import json
import os
import posixpath
import re
import shutil

import torch.distributed as dist
import torch.distributed.checkpoint as dcp

import checkpoint
import store

WRITE_THREADS = 8     # concurrent uploads per rank into a bucket
_NAME = re.compile(r"^step-(\d+)$")
META = "meta.json"
_pending = {"future": None, "group": None}


def path_for(directory: str, step: int) -> str:
    if store.is_url(directory):
        return store.join(directory, f"step-{step:010d}")
    return os.path.join(directory, f"step-{step:010d}")


def _writer(path: str):
    """DCP's storage for `path`: a bucket through fsspec, else the directory itself."""
    if not store.is_url(path):
        return {"checkpoint_id": path}
    from torch.distributed.checkpoint._fsspec_filesystem import FsspecWriter

    # DCP's writers default to one thread: a rank's shards would go up as one stream, and a
    # SIGTERM save to a bucket has the reclaim notice for all of it.
    return {"storage_writer": FsspecWriter(path, sync_files=False, thread_count=WRITE_THREADS)}


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
    if store.is_url(directory):   # tmp == final: the marker, written last, makes it visible
        fs, path = store.filesystem(final)
        store.write_marker(fs, path, META, {**meta, "step": step, "files": store.objects(fs, path, META)})
        prune(directory, keep)
        return
    doc = {**meta, "step": step, "files": _sizes(tmp)}
    checkpoint.atomic_write_bytes(os.path.join(tmp, META), (json.dumps(doc, indent=1) + "\n").encode())
    os.rename(tmp, final)
    checkpoint._fsync_dir(directory)
    prune(directory, keep)


def _committed(final: str, is_main: bool) -> bool:
    """Whether step `final` is committed (its meta.json is there), as rank 0 sees it: every
    rank must take the same branch into dcp.save's collectives."""
    found = False
    if is_main:
        if store.is_url(final):
            fs, path = store.filesystem(final)
            found = fs.exists(posixpath.join(path, META))
        else:
            found = os.path.isfile(os.path.join(final, META))
    if dist.is_initialized() and dist.get_world_size() > 1:
        box = [found]
        dist.broadcast_object_list(box, src=0)
        found = box[0]
    return bool(found)


def _cpu_group():
    """async_save needs a process group with a CPU backend, and one of its own: its finish
    step (a gather on the writer thread) must not interleave with the step loop's collectives
    on the default group, which deadlocks once an upload (a bucket) outlasts a step."""
    if not dist.is_initialized():
        return None
    if _pending["group"] is None:
        _pending["group"] = dist.new_group(backend="gloo")   # collective: every rank saves together
    return _pending["group"]


def save(directory: str, step: int, state: dict, meta: dict, keep: int, is_main: bool,
         background: bool = False) -> str:
    wait_pending()
    final = path_for(directory, step)
    if _committed(final, is_main):
        # A step already committed (a rerun that ends where a finished run ended, or a step
        # reached again after a resume) is kept: replacing it deleted it first, and a save
        # killed then (the reclaim's grace) lost the newest checkpoint.
        if is_main:
            print(f"info checkpoint step={step} path={final} already_committed=kept", flush=True)
        return final
    url = store.is_url(directory)
    tmp = final if url else os.path.join(directory, f".step-{step:010d}.tmp")
    if is_main and url:
        fs, path = store.filesystem(final)
        store.remove(fs, path, META)     # same step saved before: marker first, then its shards
    elif is_main:
        os.makedirs(directory, exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
        if os.path.isdir(final):         # same step saved before (a rerun of a finished job)
            shutil.rmtree(final)
    _barrier()
    fut = None
    if background and hasattr(dcp, "async_save") and not _pending.get("sync_only"):
        try:
            fut = dcp.async_save(state, **_writer(tmp), process_group=_cpu_group())
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
    dcp.save(state, **_writer(tmp))
    _barrier()
    if is_main:
        _commit(directory, tmp, final, step, meta, keep)
    _barrier()
    return final


def written_bytes(path: str) -> int:
    """What a committed checkpoint holds, from its meta.json (one small read, no listing)."""
    if store.is_url(path):
        fs, p = store.filesystem(path)
        doc = json.loads(fs.cat_file(posixpath.join(p, META)))
    else:
        with open(os.path.join(path, META)) as f:
            doc = json.load(f)
    return sum(store.file_size(v) for v in (doc.get("files") or {}).values())


def list_checkpoints(directory: str) -> list[tuple[int, str]]:
    if store.is_url(directory):
        fs, path = store.filesystem(directory)
        return sorted((int(m.group(1)), path_for(directory, int(m.group(1))))
                      for n in store.children(fs, path) if (m := _NAME.match(n)))
    if not directory or not os.path.isdir(directory):
        return []
    return sorted((int(m.group(1)), os.path.join(directory, n))
                  for n in os.listdir(directory) if (m := _NAME.match(n)))


def verify(path: str) -> dict:
    if store.is_url(path):
        fs, p = store.filesystem(path)
        return store.read_marker(fs, p, META)
    with open(os.path.join(path, META)) as f:
        meta = json.load(f)
    files = meta.get("files") or {}
    if not files or _sizes(path) != files:
        raise checkpoint.CorruptCheckpoint(f"{path}: files differ from meta.json (truncated or partial)")
    return meta


def candidates(directory: str, is_main: bool, log=print) -> list[tuple[str, dict]]:
    """Every checkpoint that verifies, newest first: rank 0 picks them and tells the others (a
    broadcast, so every rank tries the same ones in the same order even if a newer one appears
    meanwhile). The caller loads the first and falls back to the next when a load fails."""
    found: list[tuple[str, dict]] = []
    if is_main and store.is_url(directory):
        found = _in_bucket(directory, log)
    elif is_main and directory:
        for tmp in (n for n in os.listdir(directory) if n.startswith(".step-")) if os.path.isdir(directory) else ():
            shutil.rmtree(os.path.join(directory, tmp), ignore_errors=True)   # a killed writer's leftovers
        for _, path in reversed(list_checkpoints(directory)):
            try:
                found.append((path, verify(path)))
            except Exception as exc:  # corrupt, partial, unreadable: fall back to an older one
                log(f"warn skipping_checkpoint={path} reason={type(exc).__name__}:{exc}")
    if dist.is_initialized():
        box = [found]
        dist.broadcast_object_list(box, src=0)
        found = box[0]
    return found


def _in_bucket(directory: str, log) -> list[tuple[str, dict]]:
    """Steps whose marker verifies (sizes and digests), newest first; the others are a killed
    writer's torn uploads or objects rewritten since (no writer runs while the job restores):
    never resumed from, and deleted."""
    found = []
    for _, path in reversed(list_checkpoints(directory)):
        try:
            found.append((path, verify(path)))
        except Exception as exc:  # no marker, sizes or digests differ, unreadable
            log(f"warn skipping_checkpoint={path} reason={type(exc).__name__}:{str(exc)[:200]}")
            if isinstance(exc, (FileNotFoundError, ValueError)):   # torn, not merely unreachable
                fs, p = store.filesystem(path)
                store.remove(fs, p, META)
    return found


def load(path: str, state: dict) -> None:
    if store.is_url(path):
        from torch.distributed.checkpoint._fsspec_filesystem import FsspecReader

        dcp.load(state, storage_reader=FsspecReader(path))
        return
    dcp.load(state, checkpoint_id=path)


def prune(directory: str, keep: int) -> None:
    if keep <= 0:
        return
    for _, path in list_checkpoints(directory)[:-keep]:
        if store.is_url(path):
            fs, p = store.filesystem(path)
            store.remove(fs, p, META)
        else:
            shutil.rmtree(path, ignore_errors=True)
