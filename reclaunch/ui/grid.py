"""Plain-text layout for `plan` and `plan --compare`: a key/value block, boxed tables, notes.

Why not rich on this path: `plan` is meant to start within 1.5x of the smallest program
that validates one pydantic model (bench/bench_startup.py prints the ratio), and importing
rich, creating its Console and laying out the plan's tables would take a large share of what
`plan` may spend over that yardstick. These tables are static (no live view, no markup, no
colour beyond bold), so the shapes rich drew are laid out here with textwrap: its HEAVY_HEAD
box, its centred titles and captions, one space of padding each side of a cell, the widest
columns narrowed first when a table is wider than the width (a word longer than its column
folds; rich cut it with "…"). tabulate would import importlib.metadata, itself a large share
of that budget. Every other verb (status, diagnose, catalog, logs, up) keeps rich.

Nothing here parses markup ("[bold]" prints as typed) and every control character is shown
as an escape (ui/text.py `visible`): text from a cluster or a file needs nothing else.
Bold (labels, column headers) only when the caller says so; `bold_ok` is the usual test.
Widths count characters (the plan's text is ASCII apart from what `visible` escapes).
"""

from __future__ import annotations

import os
import sys
import textwrap

import click

Column = tuple[str, str]   # (header, "left" | "right")


def bold_ok() -> bool:
    """Bold only on a terminal and without NO_COLOR (https://no-color.org: set and not empty)."""
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def _b(text: str, bold: bool) -> str:
    return click.style(text, bold=True) if bold and text.strip() else text


def _safe(text: str) -> str:
    """Control characters as visible escapes (ui/text.py): a cell or value can hold a node
    label or a file's text, and an ESC or a bidi override would recolour the terminal or
    break the box. Markup is never parsed here, so nothing else needs escaping."""
    if text.isprintable():
        return text
    from reclaunch.ui.text import visible

    return visible(text)


def wrap(text: str, width: int, indent: str = "") -> list[str]:
    """`text` in lines of at most `width` characters, broken at spaces (never at hyphens:
    "P10-P90"); a word longer than a line goes on lines of its own, folded, never cut.
    `indent` starts every line after the first; newlines in the text start new lines."""
    text, width = _safe(text), max(width, len(indent) + 1)
    out: list[str] = []
    for para in text.split("\n"):
        first = indent if out else ""
        if len(first) + len(para) <= width and "\t" not in para:   # most cells: no wrapping
            out.append((first + para).rstrip())
            continue
        lines = textwrap.wrap(para, width, initial_indent=first, subsequent_indent=indent,
                              break_on_hyphens=False, break_long_words=False) or [""]
        for line in lines:
            while len(line) > width:   # one long word (an instance type, a path): fold it
                out.append(line[:width])
                line = indent + line[width:]
            out.append(line)
    return out


def _centred(text: str, width: int) -> list[str]:
    """A title or caption: wrapped to the table's width, each line centred (rich's rule:
    the odd space goes to the right)."""
    return [(" " * ((width - len(line)) // 2) + line).rstrip() for line in wrap(text, width)]


def pairs(rows: list[tuple[str, str]], *, width: int, title: str | None = None,
          bold: bool = False) -> list[str]:
    """Label column, then the value wrapped to what is left of `width`, its continuation
    lines under the value: " label   value"."""
    if not rows:
        return []
    lw = max(len(k) for k, _ in rows)
    natural = max(len(line) for _, v in rows for line in _safe(v).split("\n"))
    vw = max(min(natural, width - lw - 4), 1)
    out = _centred(title, min(lw + vw + 4, width)) if title else []
    for key, value in rows:
        for i, line in enumerate(wrap(value, vw)):
            label = _b(key, bold) + " " * (lw - len(key)) if i == 0 else " " * lw
            out.append(f" {label}  {line}".rstrip())
    return out


def items(lines: list[str], *, width: int, mark: str = "-", title: str | None = None) -> list[str]:
    """A list: " - text", wrapped, continuation lines under the text."""
    if not lines:
        return []
    body = [wrap(f"{mark} {line}", width - 2, indent=" " * (len(mark) + 1)) for line in lines]
    natural = max(len(mark) + 1 + len(x) for line in lines for x in _safe(line).split("\n")) + 2
    out = _centred(title, min(natural, width)) if title else []
    return out + [f" {x}".rstrip() for b in body for x in b]


def _fit(widths: list[int], width: int) -> list[int]:
    """Narrow the widest column, one character at a time, until the table fits `width`
    (borders and padding: 3 characters a column, plus 1), as rich collapses a wide table."""
    widths = list(widths)
    while sum(widths) + 3 * len(widths) + 1 > width and max(widths) > 1:
        widths[widths.index(max(widths))] -= 1
    return widths


def _rule(left: str, fill: str, mid: str, right: str, widths: list[int]) -> str:
    return left + mid.join(fill * (w + 2) for w in widths) + right


def _row(cells: list[list[str]], widths: list[int], justs: list[str], edge: str,
         bold: bool) -> list[str]:
    out = []
    for i in range(max(len(c) for c in cells)):
        parts = []
        for lines, w, j in zip(cells, widths, justs):
            text = lines[i] if i < len(lines) else ""
            pad = " " * (w - len(text))
            parts.append(f" {pad}{_b(text, bold)} " if j == "right" else f" {_b(text, bold)}{pad} ")
        out.append(edge + edge.join(parts) + edge)
    return out


def boxed(columns: list[Column], rows: list[list[str]], *, width: int, title: str | None = None,
          caption: str | None = None, bold: bool = False) -> list[str]:
    """A table in rich's HEAVY_HEAD box: heavy lines around the header, light below it."""
    heads = [h for h, _ in columns]
    justs = [j for _, j in columns]
    natural = [max([len(h), *(len(line) for r in rows for line in _safe(r[i]).split("\n"))])
               for i, h in enumerate(heads)]
    widths = _fit(natural, width)
    total = sum(widths) + 3 * len(widths) + 1
    out = _centred(title, total) if title else []
    out.append(_rule("┏", "━", "┳", "┓", widths))
    out += _row([wrap(h, w) for h, w in zip(heads, widths)], widths, justs, "┃", bold)
    out.append(_rule("┡", "━", "╇", "┩", widths))
    for r in rows:
        out += _row([wrap(c, w) for c, w in zip(r, widths)], widths, justs, "│", False)
    out.append(_rule("└", "─", "┴", "┘", widths))
    return out + (_centred(caption, total) if caption else [])
