"""The tool schemas every model call carries: built-in and extra servers', in o200k tokens."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain_core.utils.function_calling import convert_to_openai_tool

from browser_copilot.agent.tools import TOOLS
from browser_copilot.extras.servers import ExtraServers, spec_text
from browser_copilot.llm.tokens import count_tokens

TOOL_SCHEMA_BUDGET = 4000
"""Above this many tokens of tool schemas per model call, the user is warned (doctor, start)."""


def builtin_specs() -> list[dict[str, Any]]:
    """The built-in tools as `bind_tools` sends them."""
    return [convert_to_openai_tool(tool) for tool in TOOLS]


@dataclass(frozen=True, slots=True)
class SchemaTokens:
    builtin: int
    servers: dict[str, int] = field(default_factory=dict)
    exact: bool = True

    @property
    def total(self) -> int:
        return self.builtin + sum(self.servers.values())

    @property
    def over_budget(self) -> bool:
        return self.total > TOOL_SCHEMA_BUDGET

    def line(self) -> str:
        unit = "o200k tokens" if self.exact else "tokens (estimated: run `npm ci` for exact counts)"
        parts = [f"built-in {self.builtin:,}", *(f"{name} {n:,}" for name, n in self.servers.items())]
        return f"{self.total:,} {unit} ({' + '.join(parts)})"


def schema_tokens(extras: ExtraServers) -> SchemaTokens:
    """Count the schemas of the built-in tools and of each ready server's tools (blocking: it runs the
    tokenizer in Node; call it in a thread from async code)."""
    groups: list[tuple[str, list[str]]] = [("built-in", [spec_text(s) for s in builtin_specs()])]
    for server in extras.servers:
        if server.tools:
            groups.append((server.name, [spec_text(t.spec()) for t in server.tools.values()]))
    flat = [text for _, texts in groups for text in texts]
    counts, exact = count_tokens(flat)
    sums: list[int] = []
    at = 0
    for _, texts in groups:
        sums.append(sum(counts[at : at + len(texts)]))
        at += len(texts)
    return SchemaTokens(sums[0], {name: n for (name, _), n in zip(groups[1:], sums[1:], strict=True)}, exact)
