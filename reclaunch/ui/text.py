"""Text that came from a job or a file, made safe to show.

A job's log line, a metrics field, a state file or a price overlay's `source` can hold
anything: rich markup (`[/bogus]` raises MarkupError, `[link=...]` becomes a live terminal
hyperlink) and terminal control sequences (ESC]0; retitles the window, ESC[31m recolours it,
a bidi override reorders what follows). Everything of that kind goes through `shown` (for
rich, markup escaped) or `visible` (plain echo): control characters become visible escapes,
markup becomes literal text. No rich import at module level (CLI start-up stays light).
"""

from __future__ import annotations

import unicodedata
from typing import Any

# Shown as text: a line can be very long (a job writing without newlines); a table cell or
# an error line needs the start, and says how much was cut.
MAX_CHARS = 2000


def _escape_char(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(value: Any, *, keep_newlines: bool = True, limit: int | None = MAX_CHARS) -> str:
    """`value` as text with every control character (C0, DEL, C1, and Unicode format
    characters such as bidi overrides) written as a visible escape (`\\x1b`, `\\u202e`).
    Newlines (and tabs) stay when keep_newlines; a text over `limit` characters is cut."""
    text = value if isinstance(value, str) else str(value)
    cut = 0
    if limit is not None and len(text) > limit:
        cut, text = len(text) - limit, text[:limit]
    out = []
    for ch in text:
        if keep_newlines and ch in "\n\t":
            out.append(ch)
        elif ch.isprintable() or ch == " ":
            out.append(ch)
        elif unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
            out.append(_escape_char(ch))
        else:   # other non-printables (odd spaces): visible too, never raw
            out.append(_escape_char(ch))
    if cut:
        out.append(f"... ({cut} more characters)")
    return "".join(out)


def shown(value: Any, *, keep_newlines: bool = True, limit: int | None = MAX_CHARS) -> str:
    """`visible(value)` with rich markup escaped: safe inside a rich string or table cell."""
    from rich.markup import escape

    return escape(visible(value, keep_newlines=keep_newlines, limit=limit))


def as_text(value: Any, style: str = "", *, limit: int | None = MAX_CHARS):
    """A rich Text (never parsed as markup) of `visible(value)`."""
    from rich.text import Text

    return Text(visible(value, limit=limit), style=style)
