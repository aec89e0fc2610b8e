"""Atomic, self-verifying checkpoints: ckpt-<step>.pt in one directory.

A file is written as `.ckpt-<step>.*.tmp` in the SAME directory, fsynced, then
os.replace()d onto its final name (atomic on POSIX and on Lustre/EFS/Filestore), and the
directory is fsynced. A reader therefore never sees a torn ckpt-*.pt; should storage
still corrupt one, the header's length + sha256 catch it and `latest_valid` skips to the
next newest. The whole payload is buffered in memory — right for this reference trainer,
not for 100 GB embeddings (use torch.distributed.checkpoint there).

In a bucket (CHECKPOINT_DIR=s3://..., store.py) there is no rename; one PUT of the whole
object is visible only once complete, and the same header (length + sha256, checked on load)
rejects anything torn, so `latest_valid` falls back exactly as on a file system.
"""
from __future__ import annotations

import hashlib
import io
import os
import re
import tempfile
from typing import Any

import torch

import store

MAGIC = b"RECLAUNCH-CKPT-1\n"
_NAME = re.compile(r"^ckpt-(\d+)\.pt$")


class CorruptCheckpoint(Exception):
    pass


def path_for(directory: str, step: int) -> str:
    if store.is_url(directory):
        return store.join(directory, f"ckpt-{step:010d}.pt")
    return os.path.join(directory, f"ckpt-{step:010d}.pt")


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some network filesystems refuse fsync on a directory
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: str, data: bytes) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; pods of another uid must read it
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(directory)


def save(directory: str, step: int, state: dict[str, Any], keep: int = 3) -> str:
    buf = io.BytesIO()
    torch.save(state, buf)
    payload = buf.getvalue()
    header = MAGIC + len(payload).to_bytes(8, "little") + hashlib.sha256(payload).digest()
    path = path_for(directory, step)
    if store.is_url(path):
        fs, p = store.filesystem(path)
        fs.pipe_file(p, header + payload)
    else:
        atomic_write_bytes(path, header + payload)
    prune(directory, keep)
    return path


def load(path: str, map_location: Any = "cpu") -> dict[str, Any]:
    if store.is_url(path):
        fs, p = store.filesystem(path)
        blob = fs.cat_file(p)
    else:
        with open(path, "rb") as f:
            blob = f.read()
    n = len(MAGIC)
    if len(blob) < n + 40 or blob[:n] != MAGIC:
        raise CorruptCheckpoint(f"{path}: bad header")
    size = int.from_bytes(blob[n:n + 8], "little")
    digest, payload = blob[n + 8:n + 40], blob[n + 40:]
    if len(payload) != size or hashlib.sha256(payload).digest() != digest:
        raise CorruptCheckpoint(f"{path}: truncated or corrupt ({len(payload)} of {size} bytes)")
    return torch.load(io.BytesIO(payload), map_location=map_location, weights_only=True)


def written_bytes(path: str) -> int:
    if store.is_url(path):
        fs, p = store.filesystem(path)
        return int(fs.size(p))
    return os.path.getsize(path)


def list_checkpoints(directory: str) -> list[tuple[int, str]]:
    """(step, path) of every final-named checkpoint, oldest first; tmp files never match."""
    if store.is_url(directory):
        fs, p = store.filesystem(directory)
        return sorted((int(m.group(1)), path_for(directory, int(m.group(1))))
                      for name in store.children(fs, p) if (m := _NAME.match(name)))
    if not directory or not os.path.isdir(directory):
        return []
    found = [(int(m.group(1)), os.path.join(directory, name))
             for name in os.listdir(directory) if (m := _NAME.match(name))]
    return sorted(found)


def latest_valid(directory: str, map_location: Any = "cpu", log=print) -> tuple[int, str, dict] | None:
    for step, path in reversed(list_checkpoints(directory)):
        try:
            return step, path, load(path, map_location)
        except Exception as exc:  # corrupt, truncated, unreadable: fall back to an older one
            log(f"warn skipping_checkpoint={path} reason={type(exc).__name__}:{exc}")
    return None


def prune(directory: str, keep: int) -> None:
    if keep <= 0:
        return
    for _, path in list_checkpoints(directory)[:-keep]:
        try:
            if store.is_url(path):
                fs, p = store.filesystem(path)
                fs.rm_file(p)
            else:
                os.unlink(path)
        except FileNotFoundError:
            pass


def remove_stale_tmp(directory: str) -> None:
    """Leftovers of a writer killed mid-write; call only where no writer is active."""
    if store.is_url(directory):
        return   # a killed PUT leaves no object (an unfinished multipart upload is not listed)
    if not directory or not os.path.isdir(directory):
        return
    for name in os.listdir(directory):
        if name.startswith(".ckpt-") and name.endswith(".tmp"):
            try:
                os.unlink(os.path.join(directory, name))
            except FileNotFoundError:
                pass
