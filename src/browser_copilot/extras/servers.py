"""The configured extra MCP servers together: started side by side, their tools offered to the model
while each server is ready, reported when one cannot be used. Use as `async with ExtraServers(...)`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from browser_copilot.config import Settings
from browser_copilot.extras.config import ServerConfig, load_servers
from browser_copilot.extras.connection import ExtraServer, Notice
from browser_copilot.extras.remote_tools import RemoteTool

MIN_START_TIMEOUT = 30.0
"""Starting a server (e.g. Node loading a package) may take longer than a call is allowed to."""


class ExtraServers:
    """The extra servers of `MCP_SERVERS_FILE` (none by default)."""

    def __init__(
        self,
        configs: Sequence[ServerConfig] = (),
        *,
        log_dir: Path | None = None,
        start_timeout: float = MIN_START_TIMEOUT,
        call_timeout: float = 30.0,
        notice: Notice | None = None,
        warnings: Sequence[str] = (),
        builtin: Callable[[], list[dict[str, Any]]] | None = None,
    ) -> None:
        self._notice = notice
        self._builtin = builtin
        """The built-in tools' schemas (the agent's), for the schema budget's warning at start."""
        self.file_warnings = list(warnings)
        self.servers = [
            ExtraServer(
                config,
                log_dir=log_dir or Path("."),
                start_timeout=start_timeout,
                call_timeout=call_timeout,
                notice=self._report,
            )
            for config in configs
        ]

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        notice: Notice | None = None,
        builtin: Callable[[], list[dict[str, Any]]] | None = None,
    ) -> ExtraServers:
        """The servers of the configured file (`ConfigError` when it is invalid; none when missing)."""
        loaded = load_servers(settings.servers_file, explicit=settings.mcp_servers_file is not None)
        return cls(
            loaded.servers,
            log_dir=settings.logs_dir,
            start_timeout=max(MIN_START_TIMEOUT, settings.mcp_servers_timeout),
            call_timeout=settings.mcp_servers_timeout,
            notice=notice,
            warnings=loaded.warnings,
            builtin=builtin,
        )

    def _report(self, text: str) -> None:
        if self._notice is not None:
            self._notice(text)

    async def __aenter__(self) -> ExtraServers:
        await self.start()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> None:
        """Start every server side by side; one that fails is withdrawn and reported, never raised."""
        for warning in self.file_warnings:
            self._report(warning)
        started = False
        try:
            await asyncio.gather(*(server.start() for server in self.servers))
            started = True
        finally:
            if not started:  # cancelled (Ctrl+C) while starting: stop what did start
                await self.close()
        for server in self.servers:
            if server.state == "ready":
                read_only = sum(t.read_only for t in server.tools.values())
                self._report(
                    f'MCP server "{server.name}": {len(server.tools)} tools '
                    f"({read_only} read-only, the others ask you first)."
                )
            for warning in server.warnings:
                self._report(warning)
        if self._builtin is not None and any(server.tools for server in self.servers):
            from browser_copilot.extras.budget import TOOL_SCHEMA_BUDGET, schema_tokens

            tokens = await asyncio.to_thread(schema_tokens, self, self._builtin())
            if tokens.over_budget:
                self._report(
                    f"Tool schemas: {tokens.line()}, above the {TOOL_SCHEMA_BUDGET:,}-token budget: every "
                    "model call carries them. Remove servers you do not need from MCP_SERVERS_FILE."
                )

    async def close(self) -> None:
        await asyncio.gather(*(server.close() for server in self.servers))

    # ----- what the agent uses ----------------------------------------------------------------

    def tools(self) -> list[RemoteTool]:
        """The tools offered now (servers that are ready)."""
        return [tool for server in self.servers for tool in server.tools.values()]

    def specs(self) -> list[dict[str, Any]]:
        """The tools for `bind_tools`, in OpenAI's function format."""
        return [tool.spec() for tool in self.tools()]

    def names(self) -> set[str]:
        return {tool.qualified for tool in self.tools()}

    def find(self, name: str) -> tuple[ExtraServer, RemoteTool | None] | None:
        """The server a tool name belongs to (by its prefix) and the tool, if it has (had) one."""
        for server in self.servers:
            if name.startswith(f"{server.config.prefix}__"):
                return server, server.tools.get(name) or server.known.get(name)
        return None

    def owns(self, name: str) -> bool:
        return self.find(name) is not None


@dataclass(frozen=True, slots=True)
class ToolListing:
    """What `/tools` shows for one server."""

    name: str
    state: str
    reason: str
    transport: str
    tools: list[RemoteTool] = field(default_factory=list)


def listing(extras: ExtraServers) -> list[ToolListing]:
    return [
        ToolListing(
            s.name,
            s.state,
            s.reason,
            s.config.describe(),
            sorted(s.tools.values(), key=lambda t: t.qualified),
        )
        for s in extras.servers
    ]
