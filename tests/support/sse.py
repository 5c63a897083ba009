"""Reading a Server-Sent Events stream from an aiohttp response (tests and bench/server_load.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp


async def sse_frames(response: aiohttp.ClientResponse) -> AsyncIterator[dict[str, str]]:
    """Frames as dicts (`id`, `event`, `data`); comments (heartbeats) as `{"comment": text}`."""
    fields: dict[str, str] = {}
    async for raw in response.content:
        line = raw.decode().rstrip("\r\n")
        if line.startswith(":"):
            yield {"comment": line[1:].strip()}
        elif not line:
            if "data" in fields:
                yield fields
            fields = {}
        else:
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
