"""Consoles and prompts (rich, imported only when something is shown)."""

from __future__ import annotations

from typing import Any


def console(stderr: bool = False, **kw: Any):
    from rich.console import Console
    # emoji=False: no `:name:` codes in our text, and rich's emoji table is a large import.
    return Console(stderr=stderr, highlight=False, soft_wrap=True, emoji=False, **kw)


def ask(question: str, out: Any) -> bool:
    from rich.prompt import Confirm
    return Confirm.ask(question, console=out, default=False)
