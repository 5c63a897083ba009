"""Assembling the agent from settings: the context the nodes get. Sessions live in `agent.storage`.

Importing this module is cheap; what `make_context` assembles (LangChain, the browser session, the
judge) is loaded when it is called."""

from __future__ import annotations

from typing import TYPE_CHECKING

from browser_copilot.browser.pacing import Pacing
from browser_copilot.config import Settings
from browser_copilot.events import EventSink, discard

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from browser_copilot.agent.context import AgentContext
    from browser_copilot.agent.memory import MemoryBook
    from browser_copilot.browser.session import BrowserSession
    from browser_copilot.extras.servers import ExtraServers


def make_context(
    settings: Settings,
    *,
    llm: BaseChatModel,
    browser: BrowserSession,
    events: EventSink = discard,
    memory: MemoryBook | None = None,
    extras: ExtraServers | None = None,
) -> AgentContext:
    from browser_copilot.agent.context import AgentContext, Limits
    from browser_copilot.extras.servers import ExtraServers
    from browser_copilot.safety.judge import Judge

    return AgentContext(
        llm=llm,
        browser=browser,
        limits=Limits(max_tool_steps=settings.max_tool_steps),
        vision=settings.llm_vision,
        events=events,
        url_policy=browser.url_policy,
        judge=Judge(llm, mask=browser.seen_secrets.mask_all),
        pacing=Pacing(
            mode=settings.pacing,
            actions_per_minute=settings.pacing_actions_per_minute,
            same_site_gap_ms=settings.pacing_same_site_gap_ms,
        ),
        memory=memory,
        extras=extras if extras is not None else ExtraServers(),
    )
