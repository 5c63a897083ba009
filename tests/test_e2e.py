"""End to end: the real `ChatOpenAI` against a scripted OpenAI-compatible server, a real Chromium and
the real MCP server; the app's own assembly (`make_context`) and the SQLite checkpointer."""

from __future__ import annotations

import json
from pathlib import Path

from browser_copilot.agent.factory import make_context
from browser_copilot.agent.runner import AgentRunner, compile_graph, new_session_id
from browser_copilot.agent.storage import sessions_db, sqlite_checkpointer
from browser_copilot.browser.session import BrowserSession
from browser_copilot.events import EventLog
from browser_copilot.llm.provider import build_chat_model, resolve_llm
from tests.conftest import make_settings
from tests.support.openai_server import ScriptedOpenAI, call, text
from tests.support.pages import PageServer


async def run_task(
    llm: ScriptedOpenAI, browser: BrowserSession, tmp_path: Path, *messages: str, max_steps: int = 10
) -> tuple[list[object], EventLog]:
    settings = make_settings(
        tmp_path,
        llm_base_url=llm.base_url,
        llm_api_key="sk-test-123",
        llm_model="scripted-model",
        max_tool_steps=max_steps,
    )
    endpoint = resolve_llm(settings)
    assert endpoint is not None
    log = EventLog()
    outcomes: list[object] = []
    async with sqlite_checkpointer(sessions_db(settings)) as saver:
        context = make_context(
            settings, llm=build_chat_model(settings, endpoint), browser=browser, events=log
        )
        runner = AgentRunner(compile_graph(saver), context, session_id=new_session_id())
        for message in messages:
            outcomes.append(await runner.send(message))
    return outcomes, log


def sent_tools(llm: ScriptedOpenAI) -> set[str]:
    return {tool["function"]["name"] for tool in llm.requests[0]["tools"]}


async def test_a_multi_page_task_reaches_an_answer(
    llm: ScriptedOpenAI, browser_session: BrowserSession, pages: PageServer, tmp_path: Path
) -> None:
    llm.script(
        call(
            "update_working_state",
            current_goal="Cheapest flight to Riga",
            plan=["Search flights to Riga", "Compare prices", "Answer the user"],
        ),
        call("browser_run_code", code=f"async (page) => {{ await page.goto('{pages.url('search.html')}') }}"),
        call("browser_run_code", code="async (page) => { await el(1).fill('Riga'); await el(3).click(); }"),
        call("browser_run_code", code="async (page) => await page.locator('tbody tr').allInnerTexts()"),
        call(
            "update_working_state",
            progress={"current": 3, "done": [1, 2]},
            add_facts=[
                {
                    "fact": "Ryanair is the cheapest flight to Riga at €45, small bag only",
                    "source": pages.url("results.html?to=Riga"),
                }
            ],
        ),
        text("The cheapest flight to Riga is **Ryanair at €45** (small bag only)."),
    )
    (outcome,), log = await run_task(llm, browser_session, tmp_path, "Find the cheapest flight to Riga")
    assert outcome.stop_reason == "answered"  # type: ignore[attr-defined]
    assert "Ryanair at €45" in outcome.text  # type: ignore[attr-defined]
    assert outcome.values["facts"][0]["source"].endswith("results.html?to=Riga")  # type: ignore[attr-defined]
    # The real ChatOpenAI sent the tools by bind_tools, and the page as delimited data.
    assert sent_tools(llm) == {
        "browser_run_code",
        "observe_page",
        "update_working_state",
        "request_user_confirmation",
        "handle_dialog",
        "switch_tab",
        "upload_file",
        "read_download",
        "hand_over",
        "remember_about_user",
        "forget_about_user",
    }
    last = llm.requests[-1]["messages"]
    assert "Flights to Riga" in last[-1]["content"]
    assert "<page_content untrusted>" in last[-1]["content"]
    tool_results = [m["content"] for m in last if m["role"] == "tool"]
    assert any("Ryanair\\t€45" in r or "Ryanair\t€45" in r for r in tool_results)
    assert log.of("final")[0].data["stop_reason"] == "answered"


async def test_a_destructive_step_stops_for_confirmation(
    llm: ScriptedOpenAI, browser_session: BrowserSession, pages: PageServer, tmp_path: Path
) -> None:
    llm.script(
        call("browser_run_code", code=f"async (page) => {{ await page.goto('{pages.url('mail.html')}') }}"),
        call(
            "browser_run_code",
            code=(
                "async (page) => { await page.getByLabel('To').fill('alice@example.test');"
                " await page.getByLabel('Subject').fill('Lunch'); }"
            ),
        ),
        call(
            "browser_run_code",
            code="async (page) => { await page.getByRole('button', { name: 'Send' }).click() }",
        ),
        text("Sent the message to Alice."),
    )
    waiting, sent = (await run_task(llm, browser_session, tmp_path, "Email Alice about lunch", "/yes"))[0]
    assert waiting.stop_reason == "waiting_confirmation"  # type: ignore[attr-defined]
    assert waiting.interrupt["card"]["category"] == "send"  # type: ignore[attr-defined]
    assert sent.stop_reason == "answered"  # type: ignore[attr-defined]
    count = await browser_session.run_code("async (page) => await page.evaluate(() => window.__sent ?? 0)")
    assert count.value == 1


async def test_a_task_over_the_step_limit_stops_and_says_so(
    llm: ScriptedOpenAI, browser_session: BrowserSession, pages: PageServer, tmp_path: Path
) -> None:
    step = call("browser_run_code", code=f"async (page) => {{ await page.goto('{pages.url('long.html')}') }}")
    llm.script(step, step, step, step)
    (outcome,), log = await run_task(llm, browser_session, tmp_path, "Read every chapter", max_steps=3)
    assert outcome.stop_reason == "step_limit"  # type: ignore[attr-defined]
    assert "I have not finished: I used all 3 browser actions" in outcome.text  # type: ignore[attr-defined]
    assert "Shall I continue?" in outcome.text  # type: ignore[attr-defined]
    assert len([e for e in log.of("tool_call") if e.data["tool"] == "browser_run_code"]) == 3
    # The app stopped and summed up: no model call after the third action (nothing left to bounce).
    assert len(llm.requests) == 3
    last = json.dumps(llm.requests[-1]["messages"])
    assert last.count('"role": "tool"') == 2
