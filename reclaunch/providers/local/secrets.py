"""job.env `{secret: NAME, key: KEY}` on cloud: local: the value from an owner-only env file,
else from this shell's environment, read at `up` and never printed.

Where it comes from, first found wins:
  1. `$RECLAUNCH_HOME/secrets/NAME.env`, `KEY=value` lines (the Kubernetes Secret NAME's
     data, as `kubectl create secret generic NAME --from-env-file=...` reads them). The file
     must be a regular file owned by you with mode 0600 (no group or other bits), or it is
     refused: a secret others can read is no secret.
  2. The environment variable of the job.env name itself (`export HF_TOKEN=...; reclaunch up`).
The values reach the job through launch.json (0600, in the run's 0700 directory) and the
processes' environment, as on a cluster the kubelet hands them to the container.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from reclaunch.errors import UsageError

MAX_FILE = 1 * 2**20


def env_file(secret: str) -> Path:
    from reclaunch.home import root
    return root() / "secrets" / f"{secret}.env"


def _read_env_file(path: Path) -> dict[str, str] | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(f"cannot read the secret file {path}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"the secret file {path} is not a regular file")
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise UsageError(f"the secret file {path} has mode {stat.S_IMODE(st.st_mode):o} "
                             "(or another owner); it must be yours with mode 600",
                             hint=f"chmod 600 {path}")
        data = os.read(fd, MAX_FILE + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_FILE:
        raise UsageError(f"the secret file {path} is over 1 MiB")
    out: dict[str, str] = {}
    for line in data.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        k, v = line.split("=", 1)
        out[k.strip()] = v
    return out


def resolve(refs: dict[str, Any], environ: dict[str, str] | None = None) -> dict[str, str]:
    """{job.env name: value} for each {secret, key} reference; UsageError naming the first
    one found nowhere (never its value)."""
    environ = dict(os.environ) if environ is None else environ
    out: dict[str, str] = {}
    files: dict[str, dict[str, str] | None] = {}
    for name, ref in refs.items():
        if ref.secret not in files:
            files[ref.secret] = _read_env_file(env_file(ref.secret))
        data = files[ref.secret]
        if data is not None and ref.key in data:
            value = data[ref.key]
        elif name in environ:
            value = environ[name]
        else:
            raise UsageError(
                f"job.env.{name}: secret {ref.secret!r} key {ref.key!r} not found on this "
                f"machine (cloud: local reads {env_file(ref.secret)} or ${name})",
                hint=f"put `{ref.key}=...` in {env_file(ref.secret)} (chmod 600), "
                     f"or export {name}")
        if "\0" in value:
            raise UsageError(f"job.env.{name}: the secret's value holds a NUL byte")
        out[name] = value
    return out
