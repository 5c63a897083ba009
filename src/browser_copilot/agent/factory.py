"""Assembling the agent from settings: the context the nodes get, and the session to resume."""

from __future__ import annotations

from pathlib import Path

from langchain_core.language_models import BaseChatModel

from browser_copilot.agent.context import AgentContext, Limits
from browser_copilot.browser.session import BrowserSession
from browser_copilot.config import Settings
from browser_copilot.events import EventSink, discard
from browser_copilot.safety.judge import Judge
from browser_copilot.safety.urls import UrlPolicy

SESSIONS_DB = "sessions.sqlite"
LAST_SESSION = "last_session"


def make_context(
    settings: Settings, *, llm: BaseChatModel, browser: BrowserSession, events: EventSink = discard
) -> AgentContext:
    return AgentContext(
        llm=llm,
        browser=browser,
        limits=Limits(max_tool_steps=settings.max_tool_steps),
        vision=settings.llm_vision,
        events=events,
        url_policy=UrlPolicy(*settings.domain_lists),
        judge=Judge(llm),
    )


def sessions_db(settings: Settings) -> Path:
    return settings.data_dir / SESSIONS_DB


def last_session(settings: Settings) -> str | None:
    try:
        text = (settings.data_dir / LAST_SESSION).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return text or None


def remember_session(settings: Settings, session_id: str) -> None:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    (settings.data_dir / LAST_SESSION).write_text(session_id + "\n", encoding="utf-8")
