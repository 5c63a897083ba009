"""Semantic styles for the terminal: code says what a thing is, the theme says how it looks."""

from __future__ import annotations

import sys
from typing import TextIO

from rich.console import Console
from rich.theme import Theme

THEME = Theme(
    {
        "title": "bold cyan",
        "ok": "bold green",
        "fail": "bold red",
        "warn": "yellow",
        "unverified": "bold yellow",
        "notice": "dim cyan",
        "muted": "dim",
        "prompt": "bold magenta",
        "error": "bold red",
        "url": "underline blue",
    }
)


def make_console(file: TextIO | None = None, *, width: int | None = None) -> Console:
    """The app's console; tests pass a `StringIO` and a width."""
    return Console(file=file or sys.stdout, theme=THEME, width=width, highlight=False, soft_wrap=True)
