"""Errors users see. Each carries the exit code the CLI returns (design.md: 1 runtime, 2 bad input)."""

from __future__ import annotations


class ReclaunchError(Exception):
    """Base: printed as one line by the CLI, never as a traceback."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:  # one line, plus the fix when we know it
        return self.message if not self.hint else f"{self.message} ({self.hint})"


class SpecError(ReclaunchError):
    """cluster.yaml is wrong. `problems` holds every `file:line: path: message` line."""

    exit_code = 2

    def __init__(self, problems: list[str] | str):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


class UsageError(ReclaunchError):
    """Bad command-line arguments or an unknown cluster name."""

    exit_code = 2


class PlanError(ReclaunchError):
    """The job cannot be planned as asked (no offer, no price)."""

    exit_code = 1


class ProviderError(ReclaunchError):
    """A cloud, Pulumi or Kubernetes call failed."""

    exit_code = 1


class MissingExtraError(ReclaunchError):
    """An optional dependency is not installed; names the extra that brings it."""

    exit_code = 1

    def __init__(self, module: str, extra: str):
        super().__init__(
            f"{module} is not installed", hint=f"pip install 'reclaunch[{extra}]'"
        )
        self.module = module
        self.extra = extra


def require(module: str, extra: str):
    """Import an optional heavy dependency lazily, or fail with the extra to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(module, extra) from exc


def output_error(path: object, exc: OSError, flag: str | None = "--out") -> ReclaunchError:
    """`--out PATH` (or a positional FILE: flag=None) that cannot be written: a bad argument
    (exit 2), unless the disk failed (1)."""
    import errno

    bad_path = exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EEXIST, errno.EISDIR, errno.EACCES,
                             errno.EPERM, errno.EROFS, errno.ENAMETOOLONG)
    cls = UsageError if bad_path else ReclaunchError
    return cls(f"{flag + ' ' if flag else ''}{path}: cannot write: {exc.strerror or exc}")
