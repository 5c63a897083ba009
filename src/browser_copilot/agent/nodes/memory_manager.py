"""`memory_manager`: keep the conversation within budget with langmem's `SummarizationNode` (F29).

Only messages *before* the current request are summarised (the current user message and the tool
exchange answering it stay verbatim; langmem alone can fold the current question into the summary).
The system prompt and the working state are rebuilt for every model call and never summarised."""

from __future__ import annotations

import asyncio
import importlib
from typing import Literal

from langchain_core.messages import AnyMessage, HumanMessage, RemoveMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.runtime import Runtime
from langgraph.types import Command

from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.conversation import is_feedback, masked
from browser_copilot.agent.state import AgentState
from browser_copilot.events import Event

Next = Literal["agent"]

# SummarizationNode picks what to summarise from token budgets, and uses one number both as the size
# left after summarising and as the cap on what the summariser reads. We hand it only the messages
# before the current request and want all of them summarised: counting in units of 32 tokens, "1 unit
# left" means everything goes into the summary, and 400 units (~12,800 tokens) caps its input.
UNIT_TOKENS = 32
INPUT_UNITS = 400


def _units(messages: list[AnyMessage]) -> int:
    return max(1, count_tokens_approximately(messages) // UNIT_TOKENS)


def split_point(messages: list[AnyMessage]) -> int:
    """Index of the current request's first message: everything before it may be summarised."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, HumanMessage) and not is_feedback(message):
            return index
    return 0


async def memory_manager(state: AgentState, runtime: Runtime[AgentContext]) -> Command[Next]:
    ctx = runtime.context
    messages = list(state.get("messages", []))
    cut = split_point(messages)
    while cut > 0 and isinstance(messages[cut], ToolMessage):
        cut -= 1  # never separate a tool call from its answer
    older = messages[:cut]
    mark = {"memory_mark": len(messages)}
    if not older:
        return Command(update=mark, goto="agent")
    # langmem takes seconds to import: on a thread, and only in a conversation long enough to summarise.
    short_term = await asyncio.to_thread(importlib.import_module, "langmem.short_term")
    node = short_term.SummarizationNode(
        model=ctx.summarizer or ctx.llm,
        max_tokens=INPUT_UNITS,
        max_tokens_before_summary=1,
        max_summary_tokens=INPUT_UNITS - 1,
        token_counter=_units,
    )
    previous = state.get("summary")
    context = {"running_summary": short_term.RunningSummary(previous, set(), None)} if previous else {}
    result = await node.ainvoke(
        {"messages": masked(older, ctx.browser.seen_secrets.mask), "context": context}
    )
    running = result.get("context", {}).get("running_summary")
    if running is None:
        return Command(update=mark, goto="agent")
    removed = [
        RemoveMessage(id=m.id) for m in older if m.id is not None and m.id in running.summarized_message_ids
    ]
    ctx.events(Event("notice", {"text": f"summarised {len(removed)} earlier messages"}))
    return Command(
        update={
            "summary": str(running.summary),
            "messages": removed,
            "memory_mark": len(messages) - len(removed),
        },
        goto="agent",
    )
