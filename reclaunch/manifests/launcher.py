"""`job.command` -> what torchrun runs: ONE rule for the cluster pod and `cloud: local` (issue 23).

    python x.py A          -> torchrun ... x.py A
    python -m pkg A        -> torchrun ... --module pkg A
    python -u x.py / -c .. -> torchrun ... --no-python <python> -u x.py   (interpreter flags kept)
    torchrun ... / python -m torch.distributed.run ...   -> kept: it already is the launcher
    anything else          -> None: the caller decides (the pod runs it as is, local under
                              torchrun --no-python)
Pure: no I/O; `interpreter` is the python to name after --no-python (the pod: the command's own,
local: this interpreter).
"""
from __future__ import annotations

from pathlib import PurePosixPath

PYTHONS = ("python", "python3")


def is_python(word: str) -> bool:
    name = PurePosixPath(word).name
    return name in PYTHONS or (name.startswith("python3.") and name[8:].isdigit())


def is_torchrun(command: list[str]) -> bool:
    return PurePosixPath(command[0]).name == "torchrun" or "torch.distributed.run" in command


def torchrun_tail(command: list[str], interpreter: str | None = None) -> list[str] | None:
    """torchrun's trailing arguments for a python command (see the module doc), else None.
    Raises ValueError for a bare `python` (nothing to run)."""
    if not command or not is_python(command[0]):
        return None
    rest = list(command[1:])
    if not rest:
        raise ValueError("job.command runs python with no script")
    if rest[0] == "-m" and len(rest) > 1:
        return ["--module", *rest[1:]]
    if rest[0].startswith("-"):   # -u, -c, -O, -X ...: torchrun cannot take them; run the interpreter
        return ["--no-python", interpreter or command[0], *rest]
    return rest
