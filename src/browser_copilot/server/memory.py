"""`/memory` and `/forget N` in the web chat: answered at once to the client that asked, as an
`agent_message` (no run starts; the text goes through the redaction like every outgoing message)."""

from __future__ import annotations

from typing import Any

from browser_copilot.agent.memory import STORE_ERRORS, MemoryBook, forget_command, listing
from browser_copilot.server.hub import VERSION
from browser_copilot.ui.memory import MEMORY_OFF


async def memory_reply(book: MemoryBook | None, command: str, text: str) -> dict[str, Any]:
    if book is None:
        answer = MEMORY_OFF
    else:
        try:
            argument = text.split(" ", 1)[1] if " " in text else ""
            answer = (
                await forget_command(book, argument) if command == "/forget" else listing(await book.all())
            )
        except STORE_ERRORS as exc:
            answer = f"The memory store is unavailable: {exc}"
    return {"v": VERSION, "kind": "agent_message", "text": answer, "stop_reason": "answered"}
