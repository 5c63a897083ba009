"""What a dead MCP server process looks like from the client side (the code tool's server and the
extra servers alike): the errors a call or a session ends with when the other end is gone."""

from __future__ import annotations

import anyio
from mcp.shared.exceptions import McpError as _ProtocolError

CONNECTION_LOST: tuple[type[BaseException], ...] = (
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    _ProtocolError,
    BrokenPipeError,
    ConnectionError,
)

__all__ = ["CONNECTION_LOST"]
