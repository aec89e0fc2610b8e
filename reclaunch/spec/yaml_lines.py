"""Load YAML keeping the line of every key, so errors can say `cluster.yaml:7: field`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reclaunch.errors import SpecError

Path_t = tuple[str | int, ...]

MAX_BYTES = 1 << 20  # a cluster.yaml is a few KB; anything past 1 MiB is not one
# Nodes visited, aliases expanded. 1 MiB of YAML holds at most ~0.5M nodes; past this, aliases
# are multiplying a small file into a huge document (a "billion laughs" bomb).
MAX_NODES = 1_000_000
# Characters of scalar text after aliases are expanded. Without aliases a document cannot
# hold more text than the file, so past twice the file limit aliases are multiplying it
# (`x: &x "<100 KB>"` then `args: [*x, *x, ...]` renders hundreds of MB of manifests).
MAX_TEXT = 2 * MAX_BYTES
# Python refuses to turn more than 4300 digits into an int; no setting needs more than 30.
MAX_DIGITS = 30


def _check_timestamp(node: Any, path: Path_t, filename: str) -> None:
    """YAML reads a bare `2026-13-45` as a date; PyYAML then fails with datetime's ValueError
    at construction, where no line is known. Build it here, with PyYAML's own constructor,
    so an impossible date is one `file:line: field:` error that says to quote it."""
    from yaml.constructor import SafeConstructor

    try:
        SafeConstructor().construct_yaml_timestamp(node)
    except ValueError as exc:
        where = ".".join(str(p) for p in path) or "value"
        raise SpecError(f"{filename}:{node.start_mark.line + 1}: {where}: {node.value!r} reads as "
                        f"a date and is not one ({exc}); quote it if it is text") from None


def _walk(node: Any, path: Path_t, lines: dict[Path_t, int], filename: str, depth: int = 0,
          visited: list[int] | None = None) -> None:
    import yaml

    if depth > 50:
        raise SpecError(f"{filename}:{node.start_mark.line + 1}: nesting deeper than 50 levels")
    if visited is None:
        visited = [0, 0]
    visited[0] += 1
    if visited[0] > MAX_NODES:
        raise SpecError(f"{filename}:{node.start_mark.line + 1}: YAML aliases expand to more "
                        f"than {MAX_NODES} values; a cluster.yaml is never that large")
    if isinstance(node, yaml.ScalarNode):
        visited[1] += len(node.value)
        if visited[1] > MAX_TEXT:
            raise SpecError(f"{filename}:{node.start_mark.line + 1}: YAML aliases expand to more "
                            f"than {MAX_TEXT} characters of text; a cluster.yaml is never that large")
        if node.tag.endswith(":timestamp"):
            _check_timestamp(node, path, filename)
        digits = sum(c.isdigit() for c in node.value)
        if node.tag.endswith((":int", ":float")) and digits > MAX_DIGITS:
            where = ".".join(str(p) for p in path) or "value"
            raise SpecError(f"{filename}:{node.start_mark.line + 1}: {where}: a number with "
                            f"{digits} digits is out of range")
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
            line = key_node.start_mark.line + 1
            if key in seen and key != "<<":
                dotted = ".".join(str(p) for p in (*path, key))
                raise SpecError(f"{filename}:{line}: {dotted}: duplicate key "
                                f"(first at line {seen[key]})")
            seen[key] = line
            lines[(*path, key)] = line
            _walk(value_node, (*path, key), lines, filename, depth + 1, visited)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[(*path, i)] = item.start_mark.line + 1
            _walk(item, (*path, i), lines, filename, depth + 1, visited)


# libyaml (PyYAML's C loader) reads a spec several times faster than the pure-Python loader,
# on every `validate` and `plan`, but it is not the same YAML reader: it accepts tabs, `?` and
# block-scalar headers PyYAML refuses, and its errors are worded differently. So it is used only
# where the two agree and only for a spec it reads cleanly:
#  - printable ASCII and newlines, without the characters near which they were found to
#    differ (tabs, `?` keys, anchors, tags, block scalars, directives, escapes, BOMs, CR);
#  - small enough that its recursive composer stays shallow (depth <= indentation levels +
#    brackets + dashes);
#  - and it composed, passed _walk and constructed without any error.
# Anything else, every error included, is read again by the pure-Python loader, whose result
# and messages are the contract. tests/spec/test_yaml_fast.py holds the differential.
_FAST_CHARS = frozenset("\n" + "".join(map(chr, range(0x20, 0x7F)))) - frozenset("?&!|>%\\")
_FAST_MAX_BYTES = 64 * 1024
_FAST_MAX_NESTERS = 2000


def _fast_ok(text: str) -> bool:
    return (len(text) <= _FAST_MAX_BYTES and frozenset(text) <= _FAST_CHARS
            and text.count("[") + text.count("{") + text.count("-") <= _FAST_MAX_NESTERS)


def _read(loader: Any, filename: str) -> tuple[Any, dict[Path_t, int]] | None:
    """The document `loader` holds and the line of every key path; None for no document.
    Errors are the loader's (or _walk's SpecError): each caller decides what they mean."""
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        lines: dict[Path_t, int] = {(): node.start_mark.line + 1}
        _walk(node, (), lines, filename)
        return loader.construct_document(node), lines
    finally:
        loader.dispose()


def _load_fast(text: str, filename: str) -> tuple[Any, dict[Path_t, int]] | None:
    """libyaml's reading of `text`, or None where the pure-Python loader must decide."""
    import yaml

    loader_cls = getattr(yaml, "CSafeLoader", None)
    if loader_cls is None or not _fast_ok(text):
        return None
    try:
        return _read(loader_cls(text), filename)
    except Exception:  # noqa: BLE001 - any trouble: the pure-Python loader reads it and words it
        return None


def load_yaml(text: str, filename: str) -> tuple[Any, dict[Path_t, int]]:
    """Parse one YAML document; returns (data, {key path: 1-based line})."""
    fast = _load_fast(text, filename)
    return fast if fast is not None else load_yaml_py(text, filename)


def load_yaml_py(text: str, filename: str) -> tuple[Any, dict[Path_t, int]]:
    """load_yaml with PyYAML's pure-Python loader: the reference behaviour."""
    import yaml

    try:
        read = _read(yaml.SafeLoader(text), filename)   # the constructor reads: inside the try
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f"{mark.line + 1}" if mark else "1"
        what = (exc.problem or exc.context or "invalid YAML").strip()
        raise SpecError(f"{filename}:{line}: YAML syntax error: {what}") from None
    except yaml.YAMLError as exc:  # reader errors: control characters, bad encodings
        first = str(exc).splitlines()[0] if str(exc) else "invalid YAML"
        raise SpecError(f"{filename}:1: not a YAML file: {first}") from None
    except RecursionError:
        raise SpecError(f"{filename}:1: YAML nested too deeply") from None
    return read if read is not None else (None, {})


def read_text(path: str | Path) -> str:
    """Read a spec file as UTF-8 text, or a one-line SpecError saying why not."""
    import os
    import stat

    p = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; only regular files are read.
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as fh:  # bounded: a runaway file must not eat memory
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError
            if not stat.S_ISREG(mode):
                raise SpecError(f"{p}: not a regular file (a pipe, device or socket); "
                                "give the path of a cluster.yaml")
            raw = fh.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise SpecError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise SpecError(f"{p}: is a directory, expected a cluster.yaml") from None
    except OSError as exc:
        raise SpecError(f"{p}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:
        try:
            size = p.stat().st_size
        except OSError:
            size = 0
        what = f"{size} bytes" if size > MAX_BYTES else f"more than {MAX_BYTES} bytes"
        raise SpecError(f"{p}:1: file is {what}; a cluster.yaml is at most {MAX_BYTES}")
    if b"\x00" in raw:
        raise SpecError(f"{p}:1: binary data, not a YAML file")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SpecError(f"{p}:{line}: not UTF-8 text") from None
