"""Files written into a directory the user named: `render --out DIR`, `up --dry-run --out DIR`.

By the time we write, DIR may hold anything: a name planted as a symlink to ~/.bashrc would
make open(O_TRUNC) overwrite the link's target (with a literal job.env secret, chmod 0600).
So each file goes to a fresh temporary file in DIR (O_CREAT | O_EXCL | O_NOFOLLOW, relative to
DIR's own descriptor) and is renamed over its name: a rename replaces a link itself, never
what it points at. A sub-directory (DIR/preflight) that is a symlink is refused, not followed.
DIR itself is the path the user typed, followed like any path they type.
"""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path


def write_tree(out: Path, groups: dict[str, dict[str, str]], private: bool) -> int:
    """groups: {sub-directory ("" for DIR itself): {file name: text}} -> files written.
    private: the files may hold job.env values (0600 files, 0700 directories). OSError out."""
    dmode, fmode = (0o700, 0o600) if private else (0o777, 0o644)
    out.mkdir(parents=True, exist_ok=True, mode=dmode)
    top = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    written = 0
    try:
        for sub, files in groups.items():
            if not files:
                continue
            d = _subdir(top, sub, dmode) if sub else top
            try:
                if private:
                    os.fchmod(d, 0o700)
                for name, text in files.items():
                    _replace(d, name, text, fmode)
                    written += 1
            finally:
                if d != top:
                    os.close(d)
    finally:
        os.close(top)
    return written


def _subdir(parent: int, name: str, mode: int) -> int:
    try:
        os.mkdir(name, mode, dir_fd=parent)
    except FileExistsError:
        pass
    try:   # O_NOFOLLOW: a symlink here fails instead of leading outside DIR
        return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise OSError(errno.ENOTDIR, f"{name} in it is not a directory (a symbolic link is "
                          "not followed)") from None
        raise


def _replace(d: int, name: str, text: str, mode: int) -> None:
    if "/" in name or name in ("", ".", ".."):
        raise OSError(f"not a file name: {name!r}")
    tmp = f".{name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=d)
    try:
        with os.fdopen(fd, "w") as fh:
            os.fchmod(fh.fileno(), mode)   # the umask narrowed O_CREAT's mode
            fh.write(text)
        os.replace(tmp, name, src_dir_fd=d, dst_dir_fd=d)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=d)
        except OSError:
            pass
        raise
