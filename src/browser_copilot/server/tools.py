"""`/tools` in the web chat: the tools the agent can use, answered at once to the client that asked, as
an `agent_message` (no run starts), the same listing as the terminal's."""

from __future__ import annotations

import asyncio
from typing import Any

from browser_copilot.agent.tools import builtin_specs
from browser_copilot.extras.budget import schema_tokens
from browser_copilot.extras.servers import ExtraServers
from browser_copilot.server.hub import VERSION
from browser_copilot.ui.tools_view import tools_text


async def tools_reply(extras: ExtraServers) -> dict[str, Any]:
    tokens = await asyncio.to_thread(schema_tokens, extras, builtin_specs())
    return {
        "v": VERSION,
        "kind": "agent_message",
        "text": tools_text(extras, tokens),
        "stop_reason": "answered",
        "command": "/tools",
    }
