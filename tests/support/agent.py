"""What tests of the agent share: a runner over the shared browser with a scripted model, page reads."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from browser_copilot.agent.context import AgentContext, Limits
from browser_copilot.agent.runner import AgentRunner, compile_graph, new_session_id
from browser_copilot.browser.observing import observe
from browser_copilot.browser.session import BrowserSession
from browser_copilot.events import EventLog
from browser_copilot.safety.judge import Judge
from browser_copilot.sandbox.urls import UrlPolicy
from tests.support.pages import PageServer
from tests.support.scripted_model import ScriptedModel


async def value(session: BrowserSession, expression: str) -> Any:
    """A JavaScript expression's value in the agent's tab."""
    result = await session.run_code(
        f"async (page) => await page.evaluate(() => {expression})", idempotent=True
    )
    return result.value


async def fresh(session: BrowserSession, pages: PageServer, page: str) -> dict[str, list[int]]:
    """Open a test page and observe it; the frames of its numbered elements (for `guarded_code`)."""
    await session.goto(pages.url(page))
    observation = await observe(session)
    return {str(k): v for k, v in observation.frames_by_number().items()}


def make_runner(
    session: BrowserSession,
    *replies: Any,
    policy: UrlPolicy | None = None,
    judge_model: ScriptedModel | None = None,
) -> tuple[AgentRunner, EventLog]:
    """A runner in memory over the shared browser; the model (and the judge, if given) scripted."""
    log = EventLog()
    context = AgentContext(
        llm=ScriptedModel(replies=list(replies)),
        browser=session,
        limits=Limits(),
        events=log,
        url_policy=policy or UrlPolicy(),
        judge=Judge(judge_model),
    )
    return AgentRunner(compile_graph(InMemorySaver()), context, session_id=new_session_id()), log
