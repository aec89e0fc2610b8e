"""job.workdir: pack a local directory, put it where the pods read it, unpack it there.

What goes in is what git would commit: inside a git work tree, `git ls-files --cached
--others --exclude-standard` (tracked files and untracked ones no .gitignore, .git/info/exclude
or global excludes rule out); a plain directory is read through a throwaway index with the same
command, so its .gitignore files apply too. git's own matcher, not a copy of it: SkyPilot reads
its workdir's exclusions the same way (skypilot-org/skypilot sky/data/storage_utils.py
@0052932e, get_excluded_files_from_gitignore: `git ls-files --others --ignore
--exclude-standard`). Without git, a directory with a .gitignore is refused rather than packed
whole.

Bounded like dstack's upload (dstack docs: each files/repo entry at most 2 MiB by default,
DSTACK_SERVER_CODE_UPLOAD_LIMIT; "Use .gitignore/.dstackignore to exclude large files"):
job.workdir_max_size (default 64 MiB before packing), and the refusal names the largest files.
Secrets are refused, not packed: the archive is readable by anyone who can read the job's
ConfigMap or bucket prefix. Content-addressed: a deterministic tar.gz (sorted names, no times,
no owners) named by its sha256, so the same files are the same archive and are uploaded once.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import subprocess
import tarfile
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from reclaunch.errors import ProviderError, UsageError
from reclaunch.planner.workdir import INLINE_MAX, WorkdirPack
from reclaunch.spec.env_rules import CREDENTIAL_FORMATS

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.spec.models import Spec

GIT_TIMEOUT = 60
SCAN_BYTES = 256 * 1024        # of each file, for the secret patterns below

# Files that hold credentials by their name (dotenv, netrc, ssh and TLS keys, cloud and
# registry credentials, kubeconfigs): the names these tools write them under.
SECRET_NAMES = re.compile(
    r"(^|/)(\.env(\..+)?|\.netrc|\.pypirc|\.npmrc|\.git-credentials|id_(rsa|dsa|ecdsa|ed25519)"
    r"(_sk)?|.+\.(pem|key|p12|pfx|jks|keystore)|\.aws/credentials|\.docker/config\.json|"
    r"\.kube/config|kubeconfig(\.ya?ml)?|credentials\.json|service[-_]account.*\.json)$", re.I)
# Content: the credential formats job.env refuses (spec/env_rules.py), and a GCP
# service-account key file ("private_key" holding a PEM key).
SECRET_TEXT = re.compile(b"|".join([p.pattern.encode() for _, p in CREDENTIAL_FORMATS]
                                   + [rb"\"private_key\"\s*:\s*\"-----BEGIN"]))


def source_dir(spec: "Spec") -> Path:
    """job.workdir, relative to the spec file's own directory."""
    base = Path(getattr(spec, "_source", "") or ".").resolve().parent
    return (base / os.path.expanduser(spec.job.workdir)).resolve()


def _refuse(spec: "Spec", message: str, hint: str | None = None) -> UsageError:
    return UsageError(f"{spec.where('job', 'workdir')}: job.workdir: {message}", hint=hint)


def _git(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> bytes:
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=GIT_TIMEOUT,
                         env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)
    if out.returncode:
        raise ProviderError(f"git {' '.join(args[:2])} in {cwd}: "
                            f"{out.stderr.decode(errors='replace').strip()[:300]}")
    return out.stdout


def listed(spec: "Spec", root: Path) -> list[str]:
    """The files of `root` to pack (relative, '/'-separated), as git would see them."""
    import shutil
    import tempfile

    if shutil.which("git") is None:
        if any(root.rglob(".gitignore")):
            raise _refuse(spec, f"{root} has a .gitignore, and git is not installed to apply it",
                          hint="install git, or remove the .gitignore to pack every file")
        return sorted(str(p.relative_to(root)).replace(os.sep, "/") for p in root.rglob("*")
                      if (p.is_file() or p.is_symlink()) and ".git" not in p.relative_to(root).parts)
    cmd = ["ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    inside = subprocess.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=root,
                            capture_output=True, timeout=GIT_TIMEOUT, stdin=subprocess.DEVNULL)
    if inside.returncode == 0 and inside.stdout.strip() == b"true":
        out = _git(cmd, root)
    else:   # a plain directory: an empty index of our own, the directory as its work tree
        with tempfile.TemporaryDirectory(prefix="reclaunch-git-") as tmp:
            _git(["init", "--quiet", "--bare", tmp], root)
            out = _git([f"--git-dir={tmp}", f"--work-tree={root}", *cmd], root)
    return sorted(n for n in out.decode("utf-8", "surrogateescape").split("\0") if n)


def _human(n: float) -> str:
    from reclaunch.spec.units import human_bytes
    return human_bytes(n)


def pack(spec: "Spec") -> WorkdirPack | None:
    """The packed job.workdir (None without one); refusals are one line naming the field."""
    if not spec.job.workdir:
        return None
    root = source_dir(spec)
    if not root.is_dir():
        raise _refuse(spec, f"{root} is not a directory")
    names, notes = [], []
    for name in listed(spec, root):
        path = root / name
        if name.endswith("/"):       # a nested git repository: its own files, not ours to list
            notes.append(f"{name} (a nested git repository) left out")
            continue
        if path.is_symlink():
            target = (path.parent / os.readlink(path)).resolve()
            if not target.is_relative_to(root):
                notes.append(f"{name} (a link out of the workdir) left out")
                continue
        elif not path.is_file():     # tracked but deleted, or a socket: nothing to pack
            continue
        names.append(name)
    sizes = {n: (root / n).lstat().st_size for n in names}
    total = sum(sizes.values())
    if total > spec.job.workdir_max_size:
        big = sorted(sizes, key=lambda n: -sizes[n])[:3]
        raise _refuse(spec, f"{_human(total)} in {len(names)} files is over job.workdir_max_size "
                      f"{_human(spec.job.workdir_max_size)}; largest: "
                      + ", ".join(f"{n} {_human(sizes[n])}" for n in big),
                      hint="add large files to .gitignore (data belongs in storage or a bucket), "
                           "or raise job.workdir_max_size")
    secrets = [n for n in names if _secret(root / n, n)]
    if secrets:
        raise _refuse(spec, f"{', '.join(secrets[:5])} look(s) like credentials; a workdir is "
                      "readable by anyone who can read the job's ConfigMap or bucket",
                      hint="remove them or add them to .gitignore; give secrets to the job as "
                           "job.env NAME: {secret: SECRET, key: KEY}")
    data = _archive(root, names)
    digest = hashlib.sha256(data).hexdigest()
    from reclaunch.home import private_dir

    path = private_dir("workdir") / f"{digest[:32]}.tar.gz"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    return WorkdirPack(source=str(root), digest=digest, archive_bytes=len(data), files=len(names),
                       unpacked_bytes=total, path=str(path),
                       inline=data if len(data) <= INLINE_MAX else None, notes=tuple(notes))


def _secret(path: Path, name: str) -> bool:
    if SECRET_NAMES.search(name):
        return True
    if path.is_symlink():
        return False
    try:
        with open(path, "rb") as fh:
            return SECRET_TEXT.search(fh.read(SCAN_BYTES)) is not None
    except OSError:
        return False


def _archive(root: Path, names: Iterable[str]) -> bytes:
    """A tar.gz that depends on the files' names, bytes, links and executable bits only."""
    import gzip

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(names):
            info = tar.gettarinfo(str(root / name), arcname=name)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = 0
            info.pax_headers = {}
            if info.isreg():
                info.mode = 0o755 if info.mode & 0o100 else 0o644
                with open(root / name, "rb") as fh:
                    tar.addfile(info, fh)
            else:
                tar.addfile(info)
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, compresslevel=6) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def unpack(archive: Path | str, dest: Path, digest: str | None = None) -> None:
    """Extract into `dest` (cloud: local), refusing anything tarfile's "data" filter refuses
    (absolute names, links out of dest, devices): the pods' init container does the same."""
    data = Path(archive).read_bytes()
    if digest and hashlib.sha256(data).hexdigest() != digest:
        raise ProviderError(f"workdir archive {archive} does not match its digest",
                            hint="run `reclaunch up` again: it packs the directory afresh")
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(dest, filter="data")


def publish(plan, into: dict | None = None) -> str | None:
    """Upload the archive where the pods fetch it (the bucket destination), once per digest;
    -> what was done, also as into["workdir"] (a journal step's record). fsspec with the
    store's extra (s3fs, gcsfs, adlfs), as the trainer reads checkpoints."""
    said = _publish(plan)
    if said and into is not None:
        into["workdir"] = said
    return said


def _publish(plan) -> str | None:
    from reclaunch.planner.workdir import destination

    pack_ = getattr(plan.context, "workdir", None)
    if pack_ is None:
        return None
    kind, url = destination(plan.spec, pack_)
    if kind != "bucket":
        return None
    try:
        import fsspec
    except ImportError:
        from reclaunch.errors import MissingExtraError
        raise MissingExtraError("fsspec", "s3") from None
    try:
        fs, path = fsspec.core.url_to_fs(url)
        if fs.exists(path):
            return f"workdir {pack_.digest[:12]} already in {url}"
        fs.put_file(pack_.path, path)
    except ImportError as exc:   # the store's own package (s3fs, gcsfs, adlfs)
        raise ProviderError(f"job.workdir: {url} needs {exc.name or 'its fsspec package'}",
                            hint="pip install 'reclaunch[s3]' (or [gcs], [azblob])") from None
    except Exception as exc:   # noqa: BLE001 - the store's own errors: one line
        raise ProviderError(f"job.workdir: could not upload to {url}: {exc}".splitlines()[0][:300],
                            hint="check the bucket's credentials; `reclaunch up` retries") from None
    return f"workdir {pack_.digest[:12]} uploaded to {url}"
