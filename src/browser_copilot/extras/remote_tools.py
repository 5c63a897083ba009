"""What an extra MCP server offers, as the model sees it (F60): its tools under names of their own, with
schemas fit for function calling, and what a call returned, as text."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    Tool,
)

TOOL_NAME_MAX = 64
DESCRIPTION_MAX = 1000
_TOOL_CHARS = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True, slots=True)
class RemoteTool:
    """A tool of an extra server, as the model sees it (`qualified`) and as the server names it."""

    server: str
    name: str
    qualified: str
    description: str
    schema: dict[str, Any]
    read_only: bool
    """Listed in the server's `read_only_tools`: the only thing that lets a call run without asking."""
    hint: str = ""
    """What the server itself says (`readOnlyHint` / `destructiveHint`): shown, never trusted."""

    def spec(self) -> dict[str, Any]:
        """The tool for `bind_tools` (OpenAI's function format)."""
        note = "" if self.read_only else f' (MCP server "{self.server}": the user confirms each call.)'
        return {
            "type": "function",
            "function": {
                "name": self.qualified,
                "description": self.description + note,
                "parameters": self.schema,
            },
        }


@dataclass(frozen=True, slots=True)
class CallResult:
    text: str
    is_error: bool


def qualify(prefix: str, tool: str, taken: set[str]) -> str:
    """`<prefix>__<tool>`, fit for `^[a-zA-Z0-9_-]{1,64}$` and unique among `taken`."""
    name = f"{prefix}__{_TOOL_CHARS.sub('_', tool) or 'tool'}"
    if len(name) > TOOL_NAME_MAX or name in taken:
        digest = hashlib.sha1(tool.encode()).hexdigest()[:6]
        name = f"{name[: TOOL_NAME_MAX - 7]}_{digest}"
    return name


def clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The input schema as a function's parameters: an object, without the `$schema` marker."""
    cleaned = {k: v for k, v in schema.items() if k != "$schema"}
    cleaned.setdefault("type", "object")
    if cleaned["type"] == "object":
        cleaned.setdefault("properties", {})
    return cleaned


def tool_hint(tool: Tool) -> str:
    notes = tool.annotations
    if notes is None:
        return ""
    if notes.readOnlyHint:
        return "read-only"
    if notes.destructiveHint:
        return "destructive"
    return "writes" if notes.readOnlyHint is False else ""


def content_text(result: CallToolResult) -> str:
    """What the tool returned, as text: text blocks whole, other blocks named with their size."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ImageContent | AudioContent):
            parts.append(f"[{block.type} {block.mimeType}, {len(block.data) * 3 // 4:,} bytes: not shown]")
        elif isinstance(block, EmbeddedResource):
            resource = block.resource
            if isinstance(resource, BlobResourceContents):
                parts.append(f"[resource {resource.uri}, {len(resource.blob) * 3 // 4:,} bytes: not shown]")
            else:
                parts.append(resource.text)
        elif isinstance(block, ResourceLink):
            parts.append(f"[resource link {block.uri}]")
    if not parts and result.structuredContent is not None:
        parts.append(json.dumps(result.structuredContent, ensure_ascii=False))
    return "\n".join(parts) or "(the tool returned nothing)"
