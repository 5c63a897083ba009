"""`/memory` and `/forget N` in the terminal chat: the long-term memory's facts, and removing one."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from browser_copilot.agent.memory import STORE_ERRORS, MemoryBook, forget_command, listing

MEMORY_OFF = "Long-term memory is off (MEMORY=off in .env), or there is no model configured."


async def memory_command(console: Console, book: MemoryBook | None, command: str, argument: str) -> None:
    """Render `/memory` (the numbered facts with their dates) or `/forget N|all` (what was removed)."""
    if book is None:
        console.print(f"[muted]{escape(MEMORY_OFF)}[/muted]")
        return
    try:
        text = await forget_command(book, argument) if command == "/forget" else listing(await book.all())
    except STORE_ERRORS as exc:
        console.print(f"[error]The memory store is unavailable:[/error] {escape(str(exc))}")
        return
    console.print(escape(text), highlight=False)
