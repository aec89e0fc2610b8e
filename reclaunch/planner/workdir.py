"""job.workdir as the pure layers see it: the packed directory (made by runtime/workdir.py,
which reads the disk), where the pods get it, and what it adds to the time to first step.

Where it goes, by what the job already has (SkyPilot syncs a workdir to every node, dstack
uploads the repo to its server; a Kubernetes job has neither, so the archive travels in an
object the pods can read):
    local      cloud: local: unpacked into the run's own directory on this machine
    configmap  a packed archive up to INLINE_MAX: a ConfigMap, mounted by the pods
    bucket     larger: next to the checkpoints (job.checkpoint.path s3:// gs:// az://), where
               the job's identity already has rights, fetched by the pods through fsspec
A larger archive without a checkpoint bucket has nowhere to go: `destination` says why.
"""

from __future__ import annotations

from typing import Any, NamedTuple

# A ConfigMap holds at most 1 MiB (kubernetes.io/docs/concepts/configuration/configmap: "The
# data stored in a ConfigMap cannot exceed 1 MiB"); binaryData is base64 (4/3) in the object.
INLINE_MAX = 700 * 1024
ARCHIVE = "workdir.tar.gz"
PREFIX = ".reclaunch-workdir"      # under the checkpoint prefix: the job's identity may read it


class WorkdirPack(NamedTuple):
    """A packed job.workdir, content-addressed: the same files give the same digest."""

    source: str                    # the local directory, absolute
    digest: str                    # sha256 of the archive (hex)
    archive_bytes: int             # the .tar.gz
    files: int
    unpacked_bytes: int
    path: str                      # the archive in $RECLAUNCH_HOME/workdir/
    inline: bytes | None = None    # the archive itself when it fits a ConfigMap
    notes: tuple[str, ...] = ()    # what was left out and why (nested repos, outside links)

    def summary(self) -> dict[str, Any]:
        return {"source": self.source, "digest": self.digest, "files": self.files,
                "unpacked_bytes": self.unpacked_bytes, "archive_bytes": self.archive_bytes,
                "notes": list(self.notes)}


def destination(spec, pack: WorkdirPack) -> tuple[str, str | None]:
    """(kind, url): kind "here" (unpacked where the command runs, on a target that runs here) |
    "configmap" | "bucket" | "none" (url: why not, for none)."""
    from reclaunch.spec.buckets import is_url

    if spec.runs_here:
        return "here", None
    if pack.archive_bytes <= INLINE_MAX:
        return "configmap", None
    ckpt = spec.job.checkpoint.path
    if is_url(ckpt):
        return "bucket", f"{ckpt.rstrip('/')}/{PREFIX}/{pack.digest[:32]}.tar.gz"
    return "none", (f"packed to {pack.archive_bytes / 2**20:.1f} MiB, over the "
                    f"{INLINE_MAX // 1024} KiB a ConfigMap holds, and the job has no bucket to put "
                    "it in: add the large files to .gitignore, or put checkpoints in a bucket "
                    "(job.checkpoint.path: s3://BUCKET/PREFIX), where the workdir then goes too")


def startup_step(pack: WorkdirPack, data: dict[str, Any], uploads: bool) -> tuple[str, float, str]:
    """(name, seconds, source) of the workdir's step: its upload from this machine (a target
    with nodes elsewhere) and the unpack every pod does before the command starts."""
    up = pack.archive_bytes / (float(data["upload_mb_per_s"]) * 1e6) if uploads else 0.0
    unpack = pack.unpacked_bytes / (float(data["unpack_mb_per_s"]) * 1e6)
    from reclaunch.spec.units import human_bytes

    size = human_bytes(pack.archive_bytes)
    name = (f"workdir ({size} packed, {pack.files} files: upload from here, unpack in each pod)"
            if uploads else f"workdir ({size} packed, {pack.files} files: unpacked here)")
    source = "; ".join([str(data["upload_source"]).strip()] * uploads
                       + [str(data["unpack_source"]).strip()])
    return name, up + unpack, source
