"""`/memory` and `/forget N` in the web chat: answered at once to the client that asked, as an
`agent_message` (no run starts; the text goes through the redaction like every outgoing message)."""

from __future__ import annotations

from typing import Any

from browser_copilot.agent.memory import MemoryBook
from browser_copilot.server.hub import VERSION
from browser_copilot.ui.memory import memory_answer


async def memory_reply(book: MemoryBook | None, command: str, text: str) -> dict[str, Any]:
    answer, _ = await memory_answer(book, command, text.split(" ", 1)[1] if " " in text else "")
    return {
        "v": VERSION,
        "kind": "agent_message",
        "text": answer,
        "stop_reason": "answered",
        "command": command,
    }
