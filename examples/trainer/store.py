"""Object storage (s3://, gs://, az://, abfs://) for checkpoints and shards, through fsspec.

A bucket has no rename, so a checkpoint there cannot appear atomically the way a directory
does on a file system (checkpoint.py, dcp_ckpt.py). Instead every checkpoint has a marker
object written LAST, after every shard is uploaded (an S3/GCS/Blob PUT is visible only once
complete); a reader takes only checkpoints whose marker is there and whose object sizes match
the sizes the marker lists, and deletes markers FIRST, so a checkpoint being pruned or a torn
upload (a writer killed mid-write) is never resumed from.

Credentials come from the pod's workload identity (EKS Pod Identity, GKE Workload Identity,
AKS workload identity) through each SDK's default chain; nothing here reads keys. On cloud:
local, AWS_ENDPOINT_URL (a MinIO or moto server) is honoured by botocore, so by s3fs too.
"""
from __future__ import annotations

import json
import posixpath

_EXTRA = {"s3": "s3", "gs": "gcs", "gcs": "gcs", "az": "azblob", "abfs": "azblob", "abfss": "azblob"}


def is_url(path: str | None) -> bool:
    return bool(path) and "://" in str(path)


def filesystem(url: str):
    """-> (fsspec filesystem, path without the scheme). A missing implementation is one line
    naming the extra to install."""
    import fsspec

    try:
        fs, path = fsspec.core.url_to_fs(url)
    except ImportError as exc:
        scheme = url.split("://", 1)[0]
        raise SystemExit(f"error: {url} needs {exc.name or 'its fsspec implementation'}: "
                         f"pip install 'reclaunch[{_EXTRA.get(scheme, scheme)}]'") from None
    return fs, path.rstrip("/")


def join(url: str, *parts: str) -> str:
    scheme, rest = url.split("://", 1)
    return f"{scheme}://" + posixpath.join(rest.rstrip("/"), *parts)


def sizes(fs, path: str, skip: str = "") -> dict[str, int]:
    """{relative name: bytes} of every object under path (recursively), minus `skip`."""
    out = {}
    for name, info in sorted(fs.find(path, detail=True).items()):
        rel = posixpath.relpath(name, path)
        if rel != skip and info.get("type") != "directory":
            out[rel] = int(info.get("size") or 0)
    return out


def file_size(entry) -> int:
    """A marker's file entry: its size in bytes."""
    return int(entry)


def write_marker(fs, path: str, name: str, doc: dict) -> None:
    fs.invalidate_cache(path)
    fs.pipe_file(posixpath.join(path, name), (json.dumps(doc, indent=1) + "\n").encode())


def read_marker(fs, path: str, name: str) -> dict:
    """The marker if the objects under `path` are exactly the ones it lists; else raises."""
    fs.invalidate_cache(path)
    doc = json.loads(fs.cat_file(posixpath.join(path, name)))
    files = doc.get("files") or {}
    if not files or sizes(fs, path, skip=name) != files:
        raise ValueError(f"{path}: objects differ from {name} (torn upload)")
    return doc


def remove(fs, path: str, marker: str) -> None:
    """Marker first: from then on no reader takes it, whatever the rest of the delete does."""
    try:
        fs.rm_file(posixpath.join(path, marker))
    except FileNotFoundError:
        pass
    try:
        fs.rm(path, recursive=True)
    except FileNotFoundError:
        pass
    fs.invalidate_cache(path)


def children(fs, path: str) -> list[str]:
    """Names directly under path ([] when there is nothing yet)."""
    fs.invalidate_cache(path)
    try:
        return [posixpath.basename(p.rstrip("/")) for p in fs.ls(path, detail=False)]
    except FileNotFoundError:
        return []
