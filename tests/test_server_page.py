"""The web page of server mode in a real browser: the test suite's Chromium opens the page the server
serves (in a tab of its own), a task is typed, the steps stream in, "Allow once" on the confirmation card
lets the agent go on, and the final answer appears. Only the LLM is scripted (the real `ChatOpenAI`
against `tests/support/openai_server.py`); the agent's own browser actions run in the session's tab.

Screenshots go to the test's tmp dir and to `test-artifacts/server-page/` (git-ignored) to look at."""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest_asyncio

from browser_copilot.agent.storage import open_checkpointer
from browser_copilot.browser.session import BrowserSession
from browser_copilot.llm.provider import build_chat_model, resolve_llm
from browser_copilot.server.serve import Server
from browser_copilot.server.sessions import SessionManager
from tests.conftest import ROOT, make_settings
from tests.support.openai_server import ScriptedOpenAI, call, text
from tests.support.pages import PageServer

ARTIFACTS = ROOT / "test-artifacts" / "server-page"
HOSTILE = '<img src=x onerror="window.__pwned=1">'
ANSWER = (
    "Sent the message to **Alice** about lunch.\n\n"
    "- subject: `Lunch`\n"
    "- inbox: [Mail](http://127.0.0.1/mail.html)\n\n"
    f"The page said {HOSTILE} <script>window.__pwned=2</script>"
)


@dataclass
class Served:
    url: str
    """The URL `main.py serve` prints: http://127.0.0.1:PORT/?token=T."""
    base: str


@pytest_asyncio.fixture
async def served(
    llm: ScriptedOpenAI, browser_session: BrowserSession, tmp_path: Path
) -> AsyncIterator[Served]:
    settings = make_settings(
        tmp_path / "data",
        llm_base_url=llm.base_url,
        llm_api_key="sk-test-123",
        llm_model="scripted-model",
        max_tool_steps=10,
    )
    endpoint = resolve_llm(settings)
    assert endpoint is not None
    async with open_checkpointer(settings) as saver:
        manager = SessionManager(
            settings, browser=browser_session, llm=build_chat_model(settings, endpoint), checkpointer=saver
        )
        server = Server(manager)
        url = await server.start("127.0.0.1", 0)
        try:
            yield Served(url=url, base=server.base_url)
        finally:
            await server.stop()


class Tab:
    """The page's tab in the shared Chromium, driven through `browser_session.run_code`.

    The agent's tab is the MCP server's current page while it works, so the page's tab is found by its
    URL (kept on the browser context); every call is short, because the agent needs the same session.
    The page's tab is in the background while the agent works, where no animation frame comes, so clicks
    skip Playwright's "stable" check (`force`): still real mouse events at the button, hit-tested."""

    def __init__(self, browser: BrowserSession, base: str) -> None:
        self.browser = browser
        self.base = base

    async def open(self, url: str) -> None:
        code = (
            "async (page) => { const c = page.context(); const ui = await c.newPage();"
            " c.__bcUiPage = ui; await ui.setViewportSize({ width: 1280, height: 860 });"
            f" await ui.goto({json.dumps(url)}, {{ waitUntil: 'load' }}); return ui.url(); }}"
        )
        result = await self.browser.run_code(code)
        assert result.ok, result.error
        assert result.value == f"{self.base}/", result.value  # the token went into a cookie, not the URL

    async def run(self, body: str) -> Any:
        """`body` runs with `ui` (the page's tab); its `return` value comes back."""
        code = f"async (page) => {{ const ui = page.context().__bcUiPage; {body} }}"
        result = await self.browser.run_code(code, timeout=60)
        assert result.ok, result.error
        return result.value if result.returned else None

    async def evaluate(self, expression: str) -> Any:
        return await self.run(f"return await ui.evaluate(() => {expression});")

    async def wait_for(self, expression: str, *, what: str, timeout: float = 60.0) -> Any:
        """Poll a page expression (each poll a short call) until it is truthy."""
        deadline = time.monotonic() + timeout
        delay = 0.05
        while True:
            value = await self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                shown = await self.evaluate("document.body.innerText")
                raise AssertionError(
                    f"timed out after {timeout}s waiting for {what}; the page shows:\n{shown}"
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.3)

    async def screenshot(self, folder: Path, name: str, *, full_page: bool = False) -> Path:
        # A screenshot needs a frame: the page's tab comes to the front for it, then the agent's again.
        data = await self.run(
            "await ui.bringToFront();"
            f" const b = await ui.screenshot({{ fullPage: {json.dumps(full_page)} }});"
            " if (page !== ui) await page.bringToFront(); return b.toString('base64');"
        )
        path = folder / f"{name}.png"
        path.write_bytes(base64.b64decode(data))
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, ARTIFACTS / path.name)
        return path

    async def close(self) -> None:
        await self.browser.run_code(
            "async (page) => { const c = page.context(); if (c.__bcUiPage) await c.__bcUiPage.close();"
            " delete c.__bcUiPage; }"
        )


def script_the_email_task(llm: ScriptedOpenAI, pages: PageServer) -> None:
    llm.script(
        call(
            "update_working_state",
            current_goal="Email Alice about lunch",
            plan=["Open the mail page", "Write to Alice", "Send the message"],
        ),
        call("browser_run_code", code=f"async (page) => {{ await page.goto('{pages.url('mail.html')}') }}"),
        call(
            "browser_run_code",
            code=(
                "async (page) => { await page.getByLabel('To').fill('alice@example.test');"
                f" await page.getByLabel('Subject').fill({json.dumps('Lunch ' + HOSTILE)}); }}"
            ),
        ),
        call(
            "browser_run_code",
            code="async (page) => { await page.getByRole('button', { name: 'Send' }).click() }",
        ),
        call(
            "update_working_state",
            progress={"current": 3, "done": [1, 2, 3]},
            add_facts=[{"fact": "The message to Alice was sent", "source": pages.url("mail.html")}],
        ),
        text(ANSWER),
    )


async def test_the_page_runs_a_task_with_a_confirmation_card_to_a_safe_final_answer(
    llm: ScriptedOpenAI,
    served: Served,
    browser_session: BrowserSession,
    pages: PageServer,
    tmp_path: Path,
) -> None:
    script_the_email_task(llm, pages)
    # The user's pages on 127.0.0.1 are part of the task (as after any earlier test's page), so the
    # printed link, whose query carries the token, may open in a tab the code opens (network policy).
    await browser_session.goto(pages.url("index.html"))
    tab = Tab(browser_session, served.base)
    await tab.open(served.url)
    try:
        # A fresh page creates a session and connects; nothing is running.
        await tab.wait_for("document.querySelector('.session[aria-current]') !== null", what="a session")
        await tab.wait_for("document.getElementById('status-text').textContent === 'Idle'", what="idle")
        assert await tab.evaluate("document.getElementById('stop').hidden") is True

        await tab.run(
            "await ui.getByLabel('Message to the agent').fill('Email Alice about lunch');"
            " await ui.getByRole('button', { name: 'Send', exact: true }).click({ force: true });"
        )
        await tab.wait_for(
            "document.querySelectorAll('#steps [data-kind=tool_call]').length >= 3", what="steps streaming in"
        )
        await tab.wait_for("document.querySelector('.card .allow') !== null", what="the confirmation card")
        await tab.wait_for(
            "document.getElementById('status-text').textContent === 'Waiting for you'", what="waiting"
        )
        await tab.wait_for(
            "[...document.querySelectorAll('#plan .plan-step')]"
            ".some((s) => s.textContent.includes('Write to Alice'))",
            what="the plan from the state",
        )
        await tab.screenshot(tmp_path, "1-confirmation-card")

        card = await tab.evaluate(
            "Object.fromEntries([...document.querySelectorAll('.card dl .row')].map("
            "(r) => [r.querySelector('dt').textContent + ':' + r.querySelector('dd').textContent, 1]))"
        )
        rows = list(card)
        assert any(r.startswith(f"site:{pages.base_url.split('//')[1]}") for r in rows), rows
        assert any(r.startswith("page:Inbox — Mail") for r in rows), rows
        assert any(r.startswith('action:button "Send"') for r in rows), rows
        # Shown to its owner (the tab that asked) as typed: the user's own address, on the user's own screen.
        assert "typed:To: alice@example.test" in rows, rows
        # A typed value that looks like HTML is shown as text, never parsed.
        assert any(r.startswith("typed:") and HOSTILE in r for r in rows), rows
        assert await tab.evaluate("document.querySelector('.card h3').textContent") == "Confirm: send"
        # The steps in plain words; the code only on demand.
        steps = await tab.evaluate("document.getElementById('steps').innerText")
        assert "browser_run_code" not in steps and "getByRole" not in steps, steps
        assert "“Send”" in steps, steps
        assert "Inbox — Mail" in steps, steps  # a page title from an observation
        assert "confirm" in steps, steps
        await tab.run("await ui.getByLabel('show the code of each step').check({ force: true });")
        steps = await tab.evaluate("document.getElementById('steps').innerText")
        assert "getByRole('button', { name: 'Send' })" in steps, steps

        await tab.run("await ui.getByRole('button', { name: 'Allow once' }).click({ force: true });")
        await tab.wait_for("document.querySelector('.message.final') !== null", what="the final answer")
        await tab.wait_for("document.getElementById('status-text').textContent === 'Idle'", what="idle again")
        await tab.wait_for(
            "document.querySelectorAll('#plan .plan-step.done').length >= 3", what="the plan marked done"
        )
        await tab.wait_for("document.querySelector('#steps .step.final') !== null", what="the final step")
        assert await tab.evaluate("document.querySelectorAll('.message.final').length") == 1  # not twice
        # The answer streamed into a bubble of its own (SSE answer_stream); the final answer replaced it.
        assert (
            await tab.evaluate(
                "[...document.querySelectorAll("
                "'.message.streaming, .message.agent:not(.final):not(.has-card)')]"
                ".map((e) => e.className + ': ' + e.textContent.slice(0, 80))"
            )
            == []
        )

        final = await tab.evaluate(
            "(() => { const m = document.querySelector('.message.final .md'); return {"
            " text: m.innerText, strong: [...m.querySelectorAll('strong')].map((e) => e.textContent),"
            " code: [...m.querySelectorAll('code')].map((e) => e.textContent),"
            " items: m.querySelectorAll('li').length, links: [...m.querySelectorAll('a')].map((a) => a.href),"
            " injected: document.querySelectorAll('.messages img, .messages script, #steps img').length };"
            " })()"
        )
        assert final["strong"] == ["Alice"]
        assert final["code"] == ["Lunch"]
        assert final["items"] == 2
        assert final["links"] == ["http://127.0.0.1/mail.html"]
        assert HOSTILE in final["text"]  # escaped: shown as the text it is
        assert final["injected"] == 0
        assert await tab.evaluate("window.__pwned === undefined") is True
        result = await tab.evaluate("document.querySelector('.card .card-result').textContent")
        assert result == "Allowed once."
        state = await tab.evaluate("document.getElementById('state').innerText")
        assert "Email Alice about lunch" in state
        assert "The message to Alice was sent" in state
        sent = await browser_session.run_code("async (page) => await page.evaluate(() => window.__sent ?? 0)")
        assert sent.value == 1  # the agent really clicked Send, once, after Allow once
        await tab.screenshot(tmp_path, "2-final-answer")

        # A phone-sized window: one column, everything still there.
        await tab.run("await ui.setViewportSize({ width: 390, height: 844 });")
        await tab.wait_for("window.innerWidth === 390", what="the phone-sized viewport")
        layout = await tab.evaluate(
            "(() => { const box = (id) => document.querySelector(id).getBoundingClientRect();"
            " return { scroll: document.documentElement.scrollWidth, chat: box('.chat').width,"
            " side: box('.side').top, chatBottom: box('.chat').bottom, send: box('#send').right,"
            " width: document.documentElement.clientWidth }; })()"
        )
        assert layout["scroll"] <= 390, layout  # no sideways scrolling
        assert layout["send"] <= layout["width"], layout  # the Send button is on screen
        assert layout["side"] >= layout["chatBottom"], layout  # state and steps below the chat
        await tab.run("await ui.evaluate(() => document.querySelector('.card').scrollIntoView());")
        await tab.screenshot(tmp_path, "3-phone")
        await tab.screenshot(tmp_path, "3-phone-full-page", full_page=True)
        await tab.run("await ui.reload({ waitUntil: 'load' });")
        # After a reload the conversation comes back as it was shown (the user's own message, the card
        # with its decision, and the answer, each once: the SSE replay of the same answer is not shown
        # again; tests/test_web_history.py), and the steps too.
        await tab.wait_for("!!document.querySelector('#steps .step.final')", what="steps after a reload")
        await tab.wait_for("!!document.querySelector('.message.final')", what="the answer after a reload")
        assert await tab.evaluate("document.querySelectorAll('.message.final').length") == 1
        chat = await tab.evaluate(
            "[...document.querySelectorAll('#messages .message')].map((m) => m.className.split(' ')[1]"
            " + ': ' + m.textContent.slice(0, 40))"
        )
        assert [c.split(":")[0] for c in chat] == ["user", "agent", "agent"], chat
        decision = "document.querySelector('.card[data-decision=allowed] .card-result').textContent"
        assert await tab.evaluate(decision) == "Allowed once."
        assert chat[0] == "user: YouEmail Alice about lunch", chat
        assert await tab.evaluate("document.getElementById('sessions-box').open") is False
        await tab.screenshot(tmp_path, "4-phone-reloaded")
    finally:
        await tab.close()
