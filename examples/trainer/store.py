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


# The store's own digest of an object's content, as its listing reports it: GCS crc32c and
# md5Hash; S3 ETag (the MD5 of a single PUT, the MD5 of the parts' MD5s for a multipart
# upload); Azure Blob etag (a new one on every write). Recorded in the marker at commit and
# compared on resume, it catches an object rewritten with the same size (issue 41 item 11)
# for the price of the listing the size check makes anyway: nothing is read back.
_DIGESTS = ("crc32c", "md5Hash", "ETag", "etag")


def digest(info: dict) -> str | None:
    for key in _DIGESTS:
        if info.get(key):
            return f"{key}:{str(info[key]).strip(chr(34))}"
    return None


def objects(fs, path: str, skip: str = "") -> dict[str, dict]:
    """{relative name: {"size", "digest"}} of every object under path (recursively), minus `skip`."""
    out = {}
    for name, info in sorted(fs.find(path, detail=True).items()):
        rel = posixpath.relpath(name, path)
        if rel != skip and info.get("type") != "directory":
            out[rel] = {"size": int(info.get("size") or 0), "digest": digest(info)}
    return out


def file_size(entry) -> int:
    """A marker's file entry: {"size", "digest"}, or the bare size of markers written before."""
    return int(entry["size"] if isinstance(entry, dict) else entry)


def write_marker(fs, path: str, name: str, doc: dict) -> None:
    fs.invalidate_cache(path)
    fs.pipe_file(posixpath.join(path, name), (json.dumps(doc, indent=1) + "\n").encode())


def read_marker(fs, path: str, name: str) -> dict:
    """The marker if the objects under `path` are exactly the ones it lists, with the sizes
    and (where it recorded them) the digests it lists; else raises ValueError saying which."""
    fs.invalidate_cache(path)
    doc = json.loads(fs.cat_file(posixpath.join(path, name)))
    files = doc.get("files") or {}
    now = objects(fs, path, skip=name)
    if not files or set(now) != set(files) or any(file_size(files[n]) != now[n]["size"] for n in files):
        raise ValueError(f"{path}: objects differ from {name} (torn upload)")
    changed = [n for n, e in files.items() if isinstance(e, dict) and e.get("digest")
               and now[n]["digest"] is not None and now[n]["digest"] != e["digest"]]
    if changed:
        raise ValueError(f"{path}: content of {', '.join(changed[:3])} differs from the digest in {name} "
                         "(rewritten after the checkpoint was committed)")
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
