"""What the nodes get injected (LangGraph `context_schema`): never module globals, never in state."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Protocol

from langchain_core.language_models import BaseChatModel

from browser_copilot.agent.memory import MemoryBook
from browser_copilot.browser.pacing import Pacing
from browser_copilot.browser.session import BrowserSession
from browser_copilot.events import EventSink, discard
from browser_copilot.extras.servers import ExtraServers
from browser_copilot.plain_steps import narrate
from browser_copilot.safety.judge import Judge
from browser_copilot.sandbox.urls import UrlPolicy


class ActionLedger(Protocol):
    """A durable record of the approved actions about to run (`jobs.ledger`: a table in the job queue's
    database), so that an action the user allowed runs at most once even when its process dies."""

    async def claim(self, token: str) -> bool:
        """Record that the approved action with this one-time `token` is about to run; False when it was
        recorded before (a run taken again after a crash: it may already have happened)."""
        ...


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds of one request; `max_tool_steps` comes from MAX_TOOL_STEPS."""

    max_tool_steps: int = 10
    max_llm_calls_factor: int = 3
    """LLM calls per request are capped at factor × max_tool_steps + 4 (text-only loops end too)."""
    progress_every: int = 3
    """progress_analyzer runs every N tool steps on multi-step plans."""
    loop_repeats: int = 3
    """Same tool + same target + failure this many times in a row is a loop (seed 000)."""
    unchanged_limit: int = 4
    """Acting steps in a row that leave the page fingerprint unchanged count as being stuck."""
    max_invalid: int = 3
    """Malformed tool calls per request before the run stops with an error."""
    max_corrections: int = 3
    memory_max_tokens: int = 6000
    """History size (approximate tokens) above which memory_manager summarises older messages."""
    code_timeout: float = 60.0

    @property
    def max_llm_calls(self) -> int:
        return self.max_llm_calls_factor * self.max_tool_steps + 4


@dataclass(frozen=True, slots=True)
class AgentContext:
    llm: BaseChatModel
    browser: BrowserSession
    limits: Limits = field(default_factory=Limits)
    vision: bool = False
    events: EventSink = discard
    """Where the nodes' events go. Wrapped once with `plain_steps.narrate`: each event reaches every
    consumer (terminal, logs, SSE, web page) with its plain-language `summary` already in its data."""
    url_policy: UrlPolicy = field(default_factory=UrlPolicy)
    summarizer: BaseChatModel | None = None
    """Model for memory summaries (defaults to `llm`)."""
    judge: Judge = field(default_factory=lambda: Judge(None))
    """The isolated judge of ambiguous targets; without a model it fails closed (the user is asked)."""
    pacing: Pacing = field(default_factory=Pacing)
    """Human pacing of the model's actions (PACING); `auto` is resolved per call by the browser."""
    extras: ExtraServers = field(default_factory=ExtraServers)
    """Extra MCP servers (MCP_SERVERS_FILE, F60): their ready tools join the model's tools."""
    memory: MemoryBook | None = None
    """Long-term memory of the user's facts (`agent.memory.open_memory`); None: memory is off."""
    ledger: ActionLedger | None = None
    """Where an approved action is recorded before it runs (workers, `jobs/`); None: in one process."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "events", narrate(self.events))  # frozen: set once, here

    def with_events(self, events: EventSink) -> AgentContext:
        return replace(self, events=events)
