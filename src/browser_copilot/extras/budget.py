"""The tool schemas every model call carries: built-in and extra servers', in o200k tokens."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from browser_copilot.llm.tokens import count_tokens

if TYPE_CHECKING:  # servers.py calls this module: no import back at run time
    from browser_copilot.extras.servers import ExtraServers


def spec_text(spec: dict[str, Any]) -> str:
    """A tool's schema as sent to the API (compact JSON), for counting its tokens."""
    return json.dumps(spec, ensure_ascii=False, separators=(",", ":"))


TOOL_SCHEMA_BUDGET = 4000
"""Above this many tokens of tool schemas per model call, the user is warned (doctor, start)."""


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


def schema_tokens(extras: ExtraServers, builtin: list[dict[str, Any]]) -> SchemaTokens:
    """Count the schemas of the built-in tools (`agent.tools.builtin_specs()`) and of each ready
    server's tools (blocking: it runs the tokenizer in Node; call it in a thread from async code)."""
    groups: list[tuple[str, list[str]]] = [("built-in", [spec_text(s) for s in builtin])]
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
