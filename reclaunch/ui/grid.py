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


def terminal_width(most: int) -> int:
    """The terminal's columns ($COLUMNS first), at most `most`; `most` when not a terminal."""
    import shutil

    return max(40, min(most, shutil.get_terminal_size((most, 24)).columns))


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


def _fit(widths: list[int], width: int, floors: list[int] | None = None) -> list[int]:
    """Narrow the widest column, one character at a time, until the table fits `width`
    (borders and padding: 3 characters a column, plus 1), as rich collapses a wide table:
    first only down to each column's longest word (`floors`: wrapped, nothing folded), then
    any column (a word folded) when even that does not fit."""
    widths = list(widths)
    for floor in (floors or [1] * len(widths), [1] * len(widths)):
        while sum(widths) + 3 * len(widths) + 1 > width:
            room = [w if w > f else 0 for w, f in zip(widths, floor)]
            if max(room) == 0:
                break
            widths[room.index(max(room))] -= 1
    return widths


def longest_word(text: str, measure=len) -> int:
    return max((measure(w) for w in _safe(text).replace("\n", " ").split(" ")), default=0)


def floors(columns: list[Column], rows: list[list[str]], measure=len, prose: tuple[str, ...] = (),
           prose_min: int = 20) -> list[int]:
    """Each column's narrowest width that folds no word (a rich column's min_width)."""
    return [max(prose_min if h in prose else 0, longest_word(h, measure),
                *(longest_word(r[i], measure) for r in rows)) for i, (h, _) in enumerate(columns)]


def stack(columns: list[Column], rows: list[list[str]], width: int, *, measure=len,
          prose: tuple[str, ...] = (), prose_min: int = 20,
          prefer: tuple[tuple[str, str], ...] = ()) -> tuple[list[Column], list[list[str]]]:
    """Columns (and rows) for `width`: adjacent columns merged, header over header and cell
    over cell, until every column's longest word fits (3 characters of border and padding a
    column, plus 1), so an 80-column terminal shows every instance and region name whole
    instead of cut or folded (issue 42). The `prefer` pairs (headers) go first, in order,
    then two single columns before a third joins them, the merge that saves the most first;
    `prose` columns (a message) wrap at any width from `prose_min` and are never merged.
    `measure`: a cell's printed width (markup is not printed)."""
    need = floors(columns, rows, measure, prose, prose_min)
    groups = [[i] for i in range(len(columns))]

    def total() -> int:
        return sum(max(need[i] for i in g) for g in groups) + 3 * len(groups) + 1

    while total() > width:
        best, rank = None, None
        for k in range(len(groups) - 1):
            a, b = groups[k], groups[k + 1]
            if any(columns[i][0] in prose for i in a + b):
                continue
            pair = (columns[a[-1]][0], columns[b[0]][0])
            order = prefer.index(pair) if len(a) == len(b) == 1 and pair in prefer else len(prefer)
            saving = min(max(need[i] for i in a), max(need[i] for i in b)) + 3
            key = (order, len(a) + len(b), -saving)
            if rank is None or key < rank:
                best, rank = k, key
        if best is None:
            break
        groups[best:best + 2] = [groups[best] + groups[best + 1]]
    if len(groups) == len(columns):
        return columns, rows
    cols = [("\n".join(columns[i][0] for i in g),
             "right" if all(columns[i][1] == "right" for i in g) else "left") for g in groups]
    return cols, [["\n".join(r[i] for i in g) for g in groups] for r in rows]


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
    columns, rows = stack(columns, rows, width)
    heads = [h for h, _ in columns]
    justs = [j for _, j in columns]
    natural = [max([len(line) for line in h.split("\n")] + [len(line) for r in rows
                                                            for line in _safe(r[i]).split("\n")])
               for i, h in enumerate(heads)]
    floors = [max([longest_word(h)] + [longest_word(r[i]) for r in rows]) for i, h in enumerate(heads)]
    widths = _fit(natural, width, floors)
    total = sum(widths) + 3 * len(widths) + 1
    out = _centred(title, total) if title else []
    out.append(_rule("┏", "━", "┳", "┓", widths))
    out += _row([wrap(h, w) for h, w in zip(heads, widths)], widths, justs, "┃", bold)
    out.append(_rule("┡", "━", "╇", "┩", widths))
    for r in rows:
        out += _row([wrap(c, w) for c, w in zip(r, widths)], widths, justs, "│", False)
    out.append(_rule("└", "─", "┴", "┘", widths))
    return out + (_centred(caption, total) if caption else [])
