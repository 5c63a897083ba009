"""Tool calls written as text (F31): some models answer `function_call: name=... args={...}`, a JSON
object in a code block, or `<tool_call>{...}</tool_call>` instead of a structured call."""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import ToolCall

_FUNCTION_CALL = re.compile(
    r"function_call\s*:?\s*name\s*=\s*['\"]?([\w.-]+)['\"]?\s*,?\s*arg(?:ument)?s\s*=\s*(\{.*\})",
    re.DOTALL,
)
_BLOCK = re.compile(r"```(?:json|tool_call|tool)?\s*(\{.*?\})\s*```", re.DOTALL)
_TAGGED = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)
_LOOKS_LIKE_CALL = re.compile(r"function_call|<tool_call>|\"(name|tool|function)\"\s*:", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class TextualCalls:
    calls: list[ToolCall]
    error: str | None = None


def _call(name: str, args: Any, known: set[str]) -> ToolCall:
    if name not in known:
        raise ValueError(f"there is no tool named {name!r}; use one of {', '.join(sorted(known))}")
    if isinstance(args, str):
        args = json.loads(args)
    if not isinstance(args, dict):
        raise ValueError("the arguments must be a JSON object")
    return ToolCall(name=name, args=args, id=f"call_text_{uuid.uuid4().hex[:12]}", type="tool_call")


def _from_object(obj: Any, known: set[str]) -> ToolCall:
    if not isinstance(obj, dict):
        raise ValueError("a tool call must be a JSON object")
    if isinstance(obj.get("function"), dict):
        obj = obj["function"]
    name = obj.get("name") or obj.get("tool") or obj.get("tool_name")
    args = obj.get("arguments", obj.get("args", obj.get("parameters", {})))
    if not isinstance(name, str):
        raise ValueError('a tool call needs "name" and "arguments"')
    return _call(name, args, known)


def parse_textual_calls(content: str, known: set[str]) -> TextualCalls | None:
    """Calls found in `content`; None when it is plain text; `error` when it is a malformed call."""
    if not content or not _LOOKS_LIKE_CALL.search(content):
        return None
    try:
        match = _FUNCTION_CALL.search(content)
        if match:
            return TextualCalls([_call(match.group(1), json.loads(match.group(2)), known)])
        if "function_call" in content:
            raise ValueError("could not read `function_call: name=<tool> args={...}` (is the JSON complete?)")
        blocks = _TAGGED.findall(content) or _BLOCK.findall(content)
        if not blocks and content.strip().startswith("{"):
            blocks = [content.strip()]
        if not blocks:
            return None
        return TextualCalls([_from_object(json.loads(block), known) for block in blocks])
    except (ValueError, TypeError) as exc:
        reason = f"invalid JSON ({exc.msg})" if isinstance(exc, json.JSONDecodeError) else str(exc)
        return TextualCalls([], error=reason)
