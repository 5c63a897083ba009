"""`/memory` and `/forget N` (terminal and web chat): the long-term memory's facts, and removing one."""

from __future__ import annotations

from typing import Literal

from rich.console import Console
from rich.markup import escape

from browser_copilot.agent.memory import STORE_ERRORS, MemoryBook, forget_command, listing

MEMORY_OFF = "Long-term memory is off (MEMORY=off in .env), or there is no model configured."


async def memory_answer(
    book: MemoryBook | None, command: str, argument: str
) -> tuple[str, Literal["ok", "off", "error"]]:
    """The answer to `/memory` (the numbered facts: the user's words, the date, unverified ones marked) or
    `/forget N|all` (what was removed), and what kind of answer it is."""
    if book is None:
        return MEMORY_OFF, "off"
    try:
        text = await forget_command(book, argument) if command == "/forget" else listing(await book.all())
    except STORE_ERRORS as exc:
        return f"The memory store is unavailable: {exc}", "error"
    return text, "ok"


async def memory_command(console: Console, book: MemoryBook | None, command: str, argument: str) -> None:
    """`memory_answer`, printed in the terminal."""
    text, kind = await memory_answer(book, command, argument)
    style = {"ok": "", "off": "muted", "error": "error"}[kind]
    console.print(f"[{style}]{escape(text)}[/{style}]" if style else escape(text), highlight=False)
