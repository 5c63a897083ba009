"""The extra MCP servers' file (F60): `MCP_SERVERS_FILE`, by default `DATA_DIR/mcp_servers.json`.

The shape is `MultiServerMCPClient`'s connections, one per server name, optionally wrapped as
`{"mcpServers": {...}}` (Claude desktop's shape); `transport` (or `type`) may be left out when the
server has a `command` (stdio) or a `url` (streamable HTTP). One key of our own per server:
`"read_only_tools": ["tool", ...]`, the tools that may run without asking the user.

A problem in the file is a `ConfigError` whose lines name the file, the server, the field and the fix.
Keys nobody reads are warnings (a misspelt key must not pass silently).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from browser_copilot.errors import ConfigError
from browser_copilot.safety.redaction import redact

Transport = Literal["stdio", "streamable_http", "sse"]

FILE_NAME = "mcp_servers.json"
READ_ONLY_KEY = "read_only_tools"
_TRANSPORTS: dict[str, Transport] = {
    "stdio": "stdio",
    "streamable_http": "streamable_http",
    "streamable-http": "streamable_http",
    "http": "streamable_http",
    "sse": "sse",
}
_KEYS: dict[Transport, dict[str, str]] = {
    # key -> what it must be ("str", "list[str]", "dict[str]", "number", "bool")
    "stdio": {
        "command": "str",
        "args": "list[str]",
        "env": "dict[str]",
        "cwd": "str",
        "encoding": "str",
        "encoding_error_handler": "str",
    },
    "streamable_http": {
        "url": "str",
        "headers": "dict[str]",
        "timeout": "number",
        "sse_read_timeout": "number",
        "terminate_on_close": "bool",
    },
    "sse": {"url": "str", "headers": "dict[str]", "timeout": "number", "sse_read_timeout": "number"},
}
_COMMON = {"transport", "type", READ_ONLY_KEY}
_NAME = re.compile(r"[^A-Za-z0-9_-]")
PREFIX_MAX = 24
"""Tool names are `<prefix>__<tool>` and at most 64 characters (OpenAI's limit)."""


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """One configured server."""

    name: str
    """The name in the file (shown to the user)."""
    prefix: str
    """The name made safe for tool names: `<prefix>__<tool>`."""
    transport: Transport
    connection: dict[str, Any]
    """The `MultiServerMCPClient` connection: `transport` plus that transport's keys."""
    read_only_tools: tuple[str, ...] = ()

    def describe(self) -> str:
        """The command line or URL, secrets masked (it is shown and logged)."""
        if self.transport == "stdio":
            words = [str(self.connection["command"]), *map(str, self.connection.get("args", []))]
            return redact(" ".join(words))
        return redact(f"{self.transport} {self.connection['url']}")


@dataclass(frozen=True, slots=True)
class ServersFile:
    path: Path
    servers: list[ServerConfig] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    found: bool = False


def server_prefix(name: str) -> str:
    """`name` made fit for tool names (`^[a-zA-Z0-9_-]+$`, no `__`, at most PREFIX_MAX characters)."""
    safe = re.sub(r"_{2,}", "_", _NAME.sub("_", name.strip())).strip("_") or "server"
    if len(safe) > PREFIX_MAX:
        safe = f"{safe[: PREFIX_MAX - 5]}_{hashlib.sha1(name.encode()).hexdigest()[:4]}"
    return safe


class _Problems:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def error(self, where: str, message: str, fix: str) -> None:
        self.errors.append(f"MCP_SERVERS_FILE ({self.path}): {where}{message}. Fix: {fix}.")

    def warn(self, where: str, message: str) -> None:
        self.warnings.append(f"{self.path.name}: {where}{message}")


def _kind_ok(value: Any, kind: str) -> bool:
    if kind == "str":
        return isinstance(value, str)
    if kind == "list[str]":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == "dict[str]":
        return value is None or (isinstance(value, dict) and all(isinstance(v, str) for v in value.values()))
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool) and value > 0
    return isinstance(value, bool)


_KIND_WORDS = {
    "str": "a string",
    "list[str]": "a list of strings",
    "dict[str]": "an object of string values",
    "number": "a number of seconds above 0",
    "bool": "true or false",
}


def _transport(name: str, raw: dict[str, Any], problems: _Problems) -> Transport | None:
    where = f'server "{name}": '
    given = raw.get("transport", raw.get("type"))
    if given is None:
        if "command" in raw:
            return "stdio"
        if "url" in raw:
            return "streamable_http"
        problems.error(
            where,
            'has neither "command" nor "url"',
            'give a stdio server "command" (and "args"), or an HTTP server "url"',
        )
        return None
    transport = _TRANSPORTS.get(str(given).strip().lower()) if isinstance(given, str) else None
    if transport is None:
        problems.error(
            where,
            f'unknown "transport" {given!r}',
            'use "stdio" (with "command") or "streamable_http" (with "url"); "sse" works too',
        )
    return transport


def _server(name: str, raw: Any, problems: _Problems) -> ServerConfig | None:
    where = f'server "{name}": '
    if not isinstance(raw, dict):
        problems.error(where, "is not a JSON object", 'write it as {"command": "...", "args": [...]}')
        return None
    transport = _transport(name, raw, problems)
    if transport is None:
        return None
    keys = _KEYS[transport]
    required = "command" if transport == "stdio" else "url"
    before = len(problems.errors)
    if required not in raw:
        fix = (
            'add "command": the program that starts the server, e.g. "npx" or "/usr/bin/python3"'
            if required == "command"
            else 'add "url": the server\'s endpoint, e.g. "http://127.0.0.1:8000/mcp"'
        )
        problems.error(where, f'"{required}" is missing ({transport} servers need it)', fix)
    for key, value in raw.items():
        if key in keys and not _kind_ok(value, keys[key]):
            problems.error(
                where, f'"{key}" is not {_KIND_WORDS[keys[key]]}', f'make "{key}" {_KIND_WORDS[keys[key]]}'
            )
        elif key not in keys and key not in _COMMON:
            close = difflib.get_close_matches(key, [*keys, READ_ONLY_KEY], n=1, cutoff=0.7)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.warn(where, f'"{key}" is not a {transport} setting and is ignored{hint}')
    if isinstance(raw.get("command"), str) and not raw["command"].strip():
        problems.error(where, '"command" is empty', "give the program that starts the server")
    url = raw.get("url")
    if transport != "stdio" and isinstance(url, str):
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            problems.error(
                where, f'"url" {url!r} is not an http(s) URL', 'use e.g. "http://127.0.0.1:8000/mcp"'
            )
    read_only = raw.get(READ_ONLY_KEY, [])
    if not (isinstance(read_only, list) and all(isinstance(t, str) and t.strip() for t in read_only)):
        problems.error(
            where,
            f'"{READ_ONLY_KEY}" is not a list of tool names',
            f'write it as "{READ_ONLY_KEY}": ["read_file", "list_directory"] (the server\'s own tool names)',
        )
        read_only = []
    if len(problems.errors) > before:
        return None
    connection: dict[str, Any] = {"transport": transport}
    connection.update({k: v for k, v in raw.items() if k in keys})
    if transport == "stdio":
        connection.setdefault("args", [])
    prefix = server_prefix(name)
    own = f"{prefix}__"
    tools = tuple(dict.fromkeys(t.strip().removeprefix(own) for t in read_only))
    return ServerConfig(name, prefix, transport, connection, tools)


def _servers_object(data: Any, problems: _Problems) -> dict[str, Any] | None:
    if isinstance(data, dict) and isinstance(data.get("mcpServers"), dict):
        others = [k for k in data if k != "mcpServers"]
        if others:
            problems.warn("", f'top-level keys {others} next to "mcpServers" are ignored')
        servers: dict[str, Any] = data["mcpServers"]
        return servers
    if not isinstance(data, dict):
        problems.error(
            "",
            "the file is not a JSON object of servers",
            'write {"name": {"command": "...", "args": [...]}, ...} or {"mcpServers": {...}}',
        )
        return None
    return data


def parse_servers(text: str, path: Path) -> ServersFile:
    """The servers in `text` (the file's content), or `ConfigError` naming each problem and its fix."""
    problems = _Problems(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        problems.error(
            "",
            f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
            "correct the JSON there (a trailing comma or a missing quote is the usual cause)",
        )
        raise ConfigError(problems.errors) from None
    raw_servers = _servers_object(data, problems)
    servers: list[ServerConfig] = []
    for name, raw in (raw_servers or {}).items():
        if not name.strip():
            problems.error("", "a server has an empty name", "give every server a name")
            continue
        server = _server(name, raw, problems)
        if server is not None:
            servers.append(server)
    prefixes: dict[str, str] = {}
    for server in servers:
        if server.prefix in prefixes:
            problems.error(
                f'servers "{prefixes[server.prefix]}" and "{server.name}": ',
                f"both get the tool prefix {server.prefix!r}",
                "rename one of them",
            )
        prefixes[server.prefix] = server.name
    if problems.errors:
        raise ConfigError(problems.errors)
    return ServersFile(path, servers, problems.warnings, found=True)


def load_servers(path: Path, *, explicit: bool) -> ServersFile:
    """The servers of the file at `path`. A missing file means no extra servers, unless the user named
    the file (`MCP_SERVERS_FILE`): then it is a `ConfigError`."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if explicit:
            raise ConfigError(
                [
                    f"MCP_SERVERS_FILE: {path} does not exist. Fix: create it (see README, Extra MCP "
                    "servers), or unset MCP_SERVERS_FILE to use DATA_DIR/mcp_servers.json."
                ]
            ) from None
        return ServersFile(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            [f"MCP_SERVERS_FILE: {path} cannot be read ({exc}). Fix: make it a readable UTF-8 JSON file."]
        ) from None
    return parse_servers(text, path)
