"""An answer the app's checks still doubt reaches the user marked unverified, with the reasons: in the
`final` event and the state, the terminal, the web page (WebSocket and SSE) and `run`'s exit code; and
the step-limit summary says what ran. A scripted model (or OpenAI-compatible server), the real browser."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest_asyncio
from langgraph.checkpoint.memory import InMemorySaver

from browser_copilot.agent.context import AgentContext, Limits
from browser_copilot.agent.runner import AgentRunner, TurnOutcome, compile_graph, new_session_id
from browser_copilot.browser.launcher import LaunchedBrowser
from browser_copilot.browser.session import BrowserSession
from browser_copilot.events import EventLog
from browser_copilot.server.serve import Server
from browser_copilot.ui.oneshot import EXIT_CODES, EXIT_UNVERIFIED
from browser_copilot.ui.render import render_outcome
from browser_copilot.ui.theme import make_console
from tests.support.app import app_env, run_app
from tests.support.openai_server import ScriptedOpenAI, call, text
from tests.support.pages import PageServer
from tests.support.scripted_model import ScriptedModel, code, goto, say
from tests.support.server import serving_over
from tests.test_server_page import Tab

MUG = "The blue mug costs €39."  # the shop says $12.00: €39 is on no page and follows from nothing
FIGURES = "these figures were not found on any page: €39"


def runner_for(
    browser: BrowserSession, *replies: Any, limits: Limits | None = None
) -> tuple[AgentRunner, EventLog]:
    log = EventLog()
    context = AgentContext(
        llm=ScriptedModel(replies=list(replies)), browser=browser, limits=limits or Limits(), events=log
    )
    return AgentRunner(compile_graph(InMemorySaver()), context, session_id=new_session_id()), log


def final(log: EventLog) -> dict[str, Any]:
    (event,) = log.of("final")
    return event.data


async def test_an_invented_figure_repeated_after_the_send_back_is_answered_as_unverified(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    runner, log = runner_for(browser_session, goto(pages.url("shop.html")), say(MUG), say(MUG))
    outcome = await runner.send("What does the blue mug cost?")
    assert outcome.stop_reason == "answered"  # the stop reason scripts read stays as it was
    assert outcome.text == MUG
    assert final(log) | {"steps": 0} == {
        "stop_reason": "answered",
        "text": MUG,
        "steps": 0,
        "verified": False,
        "doubts": [FIGURES],
        "summary": "Answered (unverified: the app's checks doubt it) after 1 step",  # for a person
    }
    assert outcome.values["verified"] is False and outcome.values["doubts"] == [FIGURES]


async def test_a_doubted_answer_on_the_last_model_call_is_kept_not_replaced_by_the_summary(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    # Sent back now, the model would get no other call (4 of 4): the answer goes to the user, marked.
    read = code("async (page) => await page.title()")
    runner, log = runner_for(
        browser_session,
        goto(pages.url("shop.html")),
        read,
        read,
        say(MUG),
        limits=Limits(max_llm_calls_factor=0),
    )
    outcome = await runner.send("What does the blue mug cost?")
    assert outcome.stop_reason == "answered" and outcome.text == MUG
    assert (final(log)["verified"], final(log)["doubts"]) == (False, [FIGURES])


async def test_a_normal_answer_is_verified(browser_session: BrowserSession, pages: PageServer) -> None:
    runner, log = runner_for(
        browser_session,
        goto(pages.url("index.html")),
        code("async (page) => { await el(1).click(); return await page.locator('#out').textContent() }"),
        say("The page now says “clicked”."),
    )
    outcome = await runner.send("Click the hello button and tell me what the page says")
    assert final(log)["verified"] is True and final(log)["doubts"] == []
    assert outcome.values["verified"] is True


async def test_an_answer_given_while_the_sites_dialog_is_still_open_is_unverified(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    runner, log = runner_for(
        browser_session,
        goto(pages.url("admin.html")),
        code("async (page) => { await page.locator('#u2 button').click() }"),
        say("Deleted bob."),  # the site's confirm() still waits: nothing is deleted
        say("Deleted bob."),
    )
    try:
        waiting = await runner.send("Delete the user bob")
        assert waiting.stop_reason == "waiting_confirmation"
        outcome = await runner.send("/yes")
        assert outcome.stop_reason == "answered"
        assert outcome.values["observation"]["dialog"] is not None
        notes = [str(m.content) for m in outcome.values["messages"] if "dialog of the site" in str(m.content)]
        assert len(notes) == 1  # the model was sent back once, then the user is told
        assert final(log)["verified"] is False
        assert final(log)["doubts"] == ["a dialog of the site is still open: 'Delete this user?'"]
    finally:
        assert browser_session.mcp is not None
        await browser_session.mcp.call("browser_handle_dialog", {"accept": False})


async def test_the_step_limit_summary_names_the_form_step_that_was_submitted(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    runner, log = runner_for(
        browser_session,
        goto(pages.url("form.html")),
        code(
            "async (page) => { await el(1).fill('Ann Lee'); await el(2).fill('ann@example.test');"
            " await el(3).click() }"
        ),
        limits=Limits(max_tool_steps=2),
    )
    outcome = await runner.send("Apply for a library card")
    assert outcome.stop_reason == "step_limit"
    done = next(line for line in outcome.text.splitlines() if line.startswith("Done: "))
    assert "nothing" not in done
    assert "filled “Full name”, “Email”" in done
    assert "submitted a step (“Next”)" in done
    assert "form.html" in done
    assert final(log)["verified"] is False and final(log)["doubts"] == []


def test_the_terminal_marks_an_unverified_answer_with_its_reasons() -> None:
    def shown(values: dict[str, Any]) -> str:
        out = io.StringIO()
        render_outcome(make_console(out, width=100), TurnOutcome("answered", MUG, None, values))
        return out.getvalue()

    doubted = shown({"verified": False, "doubts": [FIGURES]})
    assert doubted.splitlines()[:2] == ["Unverified: the app's checks doubt this answer", f"  - {FIGURES}"]
    assert MUG in doubted
    assert "Unverified" not in shown({"verified": True, "doubts": []})


def test_run_exits_with_its_own_code_for_an_unverified_answer(
    tmp_path: Path, external_browser: LaunchedBrowser, pages: PageServer
) -> None:
    assert EXIT_UNVERIFIED not in EXIT_CODES.values()
    with ScriptedOpenAI(models=["scripted-model"], api_key="sk-test-123") as llm:
        llm.script(
            call(
                "browser_run_code", code=f"async (page) => {{ await page.goto('{pages.url('shop.html')}') }}"
            ),
            text(MUG),
            text(MUG),
        )
        env = app_env(
            tmp_path / "data",
            CDP_ENDPOINT=external_browser.endpoint.url,
            LLM_BASE_URL=llm.base_url,
            LLM_API_KEY="sk-test-123",
            LLM_MODEL="scripted-model",
        )
        done = run_app("run", "What does the blue mug cost?", env=env)
    assert done.returncode == EXIT_UNVERIFIED == 8, done.stdout + done.stderr
    # Piped: stdout has the answer alone, the marks and reasons go with the progress on stderr.
    assert "Unverified: the app's checks doubt this answer" in done.stderr
    assert FIGURES in " ".join(done.stderr.split())
    assert done.stdout == MUG + "\n"


@pytest_asyncio.fixture
async def served(
    llm: ScriptedOpenAI, browser_session: BrowserSession, tmp_path: Path
) -> AsyncIterator[tuple[Server, str]]:
    """The server on a free port over the shared browser; its printed URL (with the token)."""
    async with serving_over(browser_session, llm, tmp_path / "data") as (server, _, url):
        yield server, url


def script_the_mug(llm: ScriptedOpenAI, pages: PageServer) -> None:
    go = call("browser_run_code", code=f"async (page) => {{ await page.goto('{pages.url('shop.html')}') }}")
    llm.script(go, text(MUG), text(MUG))


async def test_the_websocket_answer_and_the_final_event_carry_the_doubts(
    served: tuple[Server, str], llm: ScriptedOpenAI, pages: PageServer
) -> None:
    server, _ = served
    script_the_mug(llm, pages)
    socket = f"ws://127.0.0.1:{server.port}/ws/doubts1?token={server.token}"
    async with aiohttp.ClientSession() as http, http.ws_connect(socket) as ws:
        await ws.send_json({"kind": "user_message", "text": "What does the blue mug cost?"})
        async with asyncio.timeout(60):
            message = await ws.receive_json()
            while message["kind"] != "agent_message":
                message = await ws.receive_json()
    assert message["stop_reason"] == "answered" and message["text"] == MUG
    assert message["verified"] is False and message["doubts"] == [FIGURES]
    finals = [json.loads(b) for _, k, b in server.manager.sessions["doubts1"].hub.after(0) if k == "final"]
    assert [(f["data"]["verified"], f["data"]["doubts"]) for f in finals] == [(False, [FIGURES])]
    # The session's state says it too, from the checkpoint (what a page reloaded after a restart reads).
    async with aiohttp.ClientSession() as http:
        state_url = f"http://127.0.0.1:{server.port}/api/sessions/doubts1"
        async with http.get(state_url, headers={"Authorization": f"Bearer {server.token}"}) as response:
            assert response.status == 200
            state = await response.json()
    assert state["outcome"] == {"stop_reason": "answered", "verified": False, "doubts": [FIGURES]}


async def test_the_web_page_shows_the_answer_marked_unverified_with_the_reasons(
    served: tuple[Server, str], llm: ScriptedOpenAI, browser_session: BrowserSession, pages: PageServer
) -> None:
    server, url = served
    script_the_mug(llm, pages)
    await browser_session.goto(pages.url("index.html"))  # the user's pages on 127.0.0.1 are in the task
    tab = Tab(browser_session, server.base_url)
    await tab.open(url)
    try:
        await tab.wait_for("document.querySelector('.session[aria-current]') !== null", what="a session")
        await tab.run(
            "await ui.getByLabel('Message to the agent').fill('What does the blue mug cost?');"
            " await ui.getByRole('button', { name: 'Send', exact: true }).click({ force: true });"
        )
        await tab.wait_for(
            "document.querySelector('#steps .step[data-kind=final]') !== null"
            " && document.querySelector('.message.final .unverified-mark') !== null",
            what="the end, the answer and its mark",
        )
        shown = await tab.evaluate(
            "(() => { const m = document.querySelector('.message.final'); return {"
            " who: m.querySelector('.who').textContent, cls: m.className,"
            " mark: m.querySelector('.unverified-mark').textContent,"
            " reasons: [...m.querySelectorAll('.unverified-mark li')].map((li) => li.textContent),"
            " answer: m.querySelector('.md') ? m.querySelector('.md').textContent : m.textContent,"
            " finals: document.querySelectorAll('.message.final').length,"
            " step: document.querySelector('#steps .step[data-kind=final]').textContent }; })()"
        )
    finally:
        await tab.close()
    assert shown["who"] == "Agent · unverified" and "unverified" in shown["cls"].split()
    assert shown["mark"].startswith("Unverified:")
    assert shown["reasons"] == [FIGURES]
    assert MUG in shown["answer"]
    assert shown["finals"] == 1  # once, though it came by SSE and by WebSocket
    assert "(unverified)" in shown["step"]
