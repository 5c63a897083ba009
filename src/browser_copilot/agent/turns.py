"""What one turn of the agent returns, and how sessions are named.

Kept apart from `agent.runner` (which loads LangGraph and LangChain) so that the chat's start path can
name the session and type its outcomes before those are loaded: its prompt comes first (issue 18).
`agent.runner` re-exports both."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from browser_copilot.agent.state import StopReason


@dataclass
class TurnOutcome:
    stop_reason: StopReason
    text: str
    """The answer or summary; for a pending question, the question."""
    interrupt: dict[str, Any] | None = None
    values: dict[str, Any] = field(default_factory=dict)


def new_session_id() -> str:
    return uuid.uuid4().hex[:12]
