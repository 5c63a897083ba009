"""The web page's live view of the agent's tab, and the basics the terminal has, in real browsers.

The agent works in the suite's shared Chromium (the real MCP server, the real graph, the real `ChatOpenAI`
against the scripted model server). The user's web page runs in a Chromium of its own, driven by
Playwright for Python with real clicks and keys, as a person would: the live view's pictures come over
the server's own DevTools connection to the agent's browser, and the user's clicks and keys go back
through it. Screenshots go to `test-artifacts/live-view/` (git-ignored) to look at."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import threading
from pathlib import Path
from typing import Any

import aiohttp
from playwright.async_api import Page, WebSocketRoute
from playwright.async_api import TimeoutError as PlaywrightTimeout

from browser_copilot.browser.session import BrowserSession
from browser_copilot.server.serve import Server
from browser_copilot.server.sessions import SessionManager
from tests.conftest import ROOT
from tests.support.openai_server import ScriptedOpenAI, call, streamed, text
from tests.support.pages import PageServer
from tests.support.waiting import async_wait_until, eventually
from tests.test_server_page import HOSTILE, script_the_email_task

ARTIFACTS = ROOT / "test-artifacts" / "live-view"
LIMIT = 30_000  # ms a page condition may take


async def sign_in(page: Page, printed: str, base: str) -> None:
    await page.goto(printed)
    assert page.url == f"{base}/"  # the token went into a cookie, not the address bar
    await until(page, "document.querySelector('.session[aria-current]') !== null")
    await until(page, "document.getElementById('status-text').textContent === 'Idle'")


async def until(page: Page, expression: str, *, timeout: int = LIMIT) -> Any:
    """A page condition, polled by the browser (bounded)."""
    try:
        handle = await page.wait_for_function(f"() => ({expression})", timeout=timeout, polling=50)
    except PlaywrightTimeout:
        shown = await page.inner_text("body")
        raise AssertionError(f"timed out waiting for {expression}; the page shows:\n{shown}") from None
    return await handle.json_value()


async def ask(page: Page, words: str) -> None:
    await page.get_by_label("Message to the agent").fill(words)
    await page.get_by_role("button", name="Send", exact=True).click()


async def shot(page: Page, tmp_path: Path, name: str, *, full_page: bool = False) -> Path:
    path = tmp_path / f"{name}.png"
    await page.screenshot(path=str(path), full_page=full_page)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, ARTIFACTS / path.name)
    return path


PICTURE_COLOUR = """([x, y]) => {
  const img = document.getElementById('live-img');
  if (img.hidden || !img.naturalWidth) return null;
  const canvas = document.createElement('canvas');
  canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
  const context = canvas.getContext('2d');
  context.drawImage(img, 0, 0);
  const [px, py] = [Math.floor(x * img.naturalWidth), Math.floor(y * img.naturalHeight)];
  return [...context.getImageData(px, py, 1, 1).data].slice(0, 3);
}"""


async def picture_colour(page: Page, x: float, y: float) -> list[int] | None:
    """The colour the live view's picture shows at (x, y), as shares of its width and height."""
    colour: list[int] | None = await page.evaluate(PICTURE_COLOUR, [x, y])
    return colour


def red(colour: list[int] | None) -> bool:
    return colour is not None and colour[0] > 170 and colour[1] < 90 and colour[2] < 90


def blue(colour: list[int] | None) -> bool:
    return colour is not None and colour[2] > 170 and colour[0] < 90


def goto(url: str) -> dict[str, Any]:
    return call("browser_run_code", code=f"async (page) => {{ await page.goto('{url}') }}")


async def agent_page(browser_session: BrowserSession, expression: str) -> Any:
    result = await browser_session.run_code(f"async (page) => await page.evaluate(() => {expression})")
    assert result.ok, result.error
    return result.value


# ----- the live view in the page ------------------------------------------------------------------


async def test_the_live_view_shows_the_agents_page_and_follows_its_action_in_plain_words(
    page: Page,
    served: tuple[Server, SessionManager, str],
    llm: ScriptedOpenAI,
    pages: PageServer,
    tmp_path: Path,
) -> None:
    server, manager, printed = served
    llm.script(
        goto(pages.url("live.html")),
        text("The page is open."),
        call(
            "browser_run_code",
            code="async (page) => { await page.getByRole('button', { name: 'Paint' }).click() }",
        ),
        text("Painted the box blue."),
    )
    await sign_in(page, printed, server.base_url)
    await ask(page, "Open the live page")
    await until(page, "document.querySelector('.message.final') !== null")
    # The live view shows the agent's page: its title, and its red box in the picture.
    await until(page, "document.getElementById('live-where').textContent.includes('Live paint')")
    await eventually(lambda: _is(page, red, 0.5, 0.2), what="the red box in the live picture", timeout=30)
    await shot(page, tmp_path, "1-live-view-red")

    await ask(page, "Paint it")
    await until(page, "document.querySelectorAll('.message.final').length === 2")
    # The picture follows: blue now, and what the agent clicked was outlined.
    await eventually(lambda: _is(page, blue, 0.5, 0.2), what="the blue box in the live picture", timeout=30)
    await until(page, "(document.getElementById('live-mark').dataset.actions || '').includes('click')")
    mark = await page.evaluate(
        "(() => { const m = document.getElementById('live-mark').style;"
        " return [parseFloat(m.left), parseFloat(m.top)]; })()"
    )
    assert 0 < mark[0] < 10 and 55 < mark[1] < 70, mark  # the Paint button: 40 px from the left, 62% down
    assert await agent_page(manager.browser, "window.__painted") == 1
    # The steps and the line under the picture say what happened in words, not code.
    await until(page, "document.querySelectorAll('#steps .step.final').length === 2")
    await until(page, "document.getElementById('live-step').textContent === 'Finished: answered'")
    steps = await page.inner_text("#steps")
    assert "“Paint”" in steps, steps
    assert "getByRole" not in steps and "browser_run_code" not in steps, steps
    await shot(page, tmp_path, "2-live-view-after-paint")


async def _is(page: Page, test: Any, x: float, y: float) -> bool:
    return bool(test(await picture_colour(page, x, y)))


async def test_a_session_card_is_running_while_it_runs_and_a_reload_keeps_the_pending_card(
    page: Page,
    served: tuple[Server, SessionManager, str],
    llm: ScriptedOpenAI,
    pages: PageServer,
    browser_session: BrowserSession,
    tmp_path: Path,
) -> None:
    server, _, printed = served
    gate = threading.Event()
    # The model takes its time over its first reply (held at the gate): the run is running meanwhile.
    llm.script(
        streamed("Let me ", "look.", gate=gate, then=call("update_working_state", current_goal="Email Alice"))
    )
    script_the_email_task(llm, pages)
    await sign_in(page, printed, server.base_url)
    await ask(page, "Email Alice about lunch")
    try:
        await until(page, "document.querySelector('.session[aria-current] .badge').textContent === 'Running'")
        await until(page, "document.getElementById('status-text').textContent === 'Running'")
        await until(page, "document.querySelector('#sessions-box .badge.state-running') !== null")
    finally:
        gate.set()
    await until(
        page,
        "document.querySelector('.card .allow') !== null && !document.querySelector('.card .allow').disabled",
    )
    await until(
        page, "document.querySelector('.session[aria-current] .badge').textContent === 'Waiting for you'"
    )
    # The card shows its owner what the action commits to, as typed (the user's own address).
    rows = await page.eval_on_selector_all(".card dl .row", "(rows) => rows.map((r) => r.innerText)")
    assert any("alice@example.test" in r for r in rows), rows
    assert any(HOSTILE in r for r in rows), rows  # as text, never parsed
    await shot(page, tmp_path, "3-card-before-reload")

    await page.reload()
    # After the reload: the same card, still answerable from this tab (its nonce came back), and the
    # conversation and the working state.
    await until(
        page,
        "document.querySelector('.card .allow') !== null && !document.querySelector('.card .allow').disabled",
    )
    assert await page.inner_text("#status-text") == "Waiting for you"
    assert await page.eval_on_selector_all(".card", "(cards) => cards.length") == 1
    assert "Email Alice about lunch" in await page.inner_text("#messages")
    await until(page, "document.getElementById('plan').innerText.includes('Write to Alice')")
    # Words for the agent go with the answer: the card allows, and the rest reaches the model.
    await page.get_by_label("A note for the agent with your answer").fill("and tell me when it went out")
    await page.get_by_role("button", name="Allow once").click()
    await until(page, "document.querySelector('.message.final') !== null")
    assert 'The user also said: \\"and tell me when it went out\\"' in json.dumps(llm.requests[-1])
    await until(page, "document.querySelector('.session[aria-current] .badge').textContent === 'Idle'")
    assert await agent_page(browser_session, "window.__sent ?? 0") == 1
    # What the session cost, from the usage of its model calls (the scripted model says 110 a call).
    # Each call's usage arrives on its own: wait for the sixth.
    await until(
        page,
        "/^[\\d,]+ tokens$/.test(document.getElementById('cost').textContent)"
        " && parseInt(document.getElementById('cost').textContent.replace(/,/g, '')) >= 660",
    )
    tokens = int((await page.inner_text("#cost")).split()[0].replace(",", ""))
    assert tokens >= 110 * 6, tokens


async def hand_over_asked(
    page: Page, served: tuple[Server, SessionManager, str], llm: ScriptedOpenAI, pages: PageServer
) -> None:
    """The model types into a password field, so the app hands the sign-in over: the web page shows it."""
    server, _, printed = served
    llm.script(
        goto(pages.url("live.html")),
        call(
            "browser_run_code", code="async (page) => { await page.getByLabel('Password').fill('guessed') }"
        ),
        text("Signed in, thank you."),
    )
    await sign_in(page, printed, server.base_url)
    await ask(page, "Sign in for me")
    await until(page, "!document.getElementById('handover').hidden")


async def test_a_hand_over_survives_a_reload_and_the_user_types_in_the_live_view(
    page: Page,
    served: tuple[Server, SessionManager, str],
    llm: ScriptedOpenAI,
    pages: PageServer,
    browser_session: BrowserSession,
    tmp_path: Path,
) -> None:
    await hand_over_asked(page, served, llm, pages)
    # The browser has no window here (headless): the page says so and shows the tab in the live view.
    where = await page.inner_text("#handover-where")
    assert "without a window" in where and "Browser panel" in where, where
    await page.reload()
    await until(page, "!document.getElementById('handover').hidden")
    await until(page, "document.getElementById('live-screen').dataset.drive === 'on'")
    await eventually(lambda: _is(page, red, 0.5, 0.2), what="the agent's page in the live view", timeout=30)

    # The user clicks the password field in the picture and types, as in the page itself.
    box = await agent_page(
        browser_session,
        "(() => { const r = document.getElementById('secret').getBoundingClientRect();"
        " return [r.left + r.width / 2, r.top + r.height / 2, innerWidth, innerHeight]; })()",
    )
    picture = await page.locator("#live-img").bounding_box()
    assert picture is not None
    await page.mouse.click(
        picture["x"] + picture["width"] * box[0] / box[2], picture["y"] + picture["height"] * box[1] / box[3]
    )
    await until(page, "Number(document.getElementById('live-mark').dataset.seen) >= 1")
    await page.keyboard.type("opensesame")
    await eventually(
        lambda: agent_page(browser_session, "window.__secretRight === true"),
        what="the typed password",
        timeout=30,
    )
    await shot(page, tmp_path, "4-hand-over-in-the-live-view")
    await page.get_by_role("button", name="Done").click()
    await until(page, "document.querySelector('.message.final') !== null")
    assert "Signed in" in await page.inner_text(".message.final")
    # The run is over: the page may be driven again; while one runs it may not (see the server tests).
    await until(page, "document.getElementById('live-screen').dataset.drive === 'on'")


async def test_the_page_fits_a_phone_with_the_live_view_and_the_commands(
    page: Page,
    served: tuple[Server, SessionManager, str],
    llm: ScriptedOpenAI,
    pages: PageServer,
    tmp_path: Path,
) -> None:
    server, _, printed = served
    llm.script(goto(pages.url("live.html")), text("Open."))
    await page.set_viewport_size({"width": 390, "height": 844})
    await sign_in(page, printed, server.base_url)
    await ask(page, "Open the live page")
    await until(page, "document.querySelector('.message.final') !== null")
    await eventually(lambda: _is(page, red, 0.5, 0.2), what="the live picture on a phone", timeout=30)
    # The page's own commands, as buttons and typed: answered in the chat at once.
    await page.get_by_role("button", name="Status").click()
    await until(page, "document.querySelector('.message.command-reply') !== null")
    status = await page.inner_text(".message.command-reply")
    assert "Session" in status and "Tokens" in status and "Browser" in status and "Model" in status, status
    assert "no window" in status, status  # the shared browser is headless
    await ask(page, "/tabs")
    await until(page, "document.querySelectorAll('.message.command-reply').length === 2")
    tabs = await page.inner_text(".message.command-reply >> nth=1")
    assert "Live paint" in tabs and "this session's tab" in tabs, tabs
    await ask(page, "/help")
    await until(page, "document.querySelectorAll('.message.command-reply').length === 3")
    assert "/status" in await page.inner_text(".message.command-reply >> nth=2")
    assert "scripted-model" in await page.inner_text("#runtime")
    layout = await page.evaluate(
        "(() => ({ scroll: document.documentElement.scrollWidth, width: document.documentElement.clientWidth,"
        " live: document.getElementById('live-screen').getBoundingClientRect().right,"
        " send: document.getElementById('send').getBoundingClientRect().right }))()"
    )
    assert layout["scroll"] <= 390, layout  # no sideways scrolling
    assert layout["live"] <= layout["width"] and layout["send"] <= layout["width"], layout
    await shot(page, tmp_path, "5-phone", full_page=True)
    await page.locator("#live-box").scroll_into_view_if_needed()
    await shot(page, tmp_path, "6-phone-live-view")


# ----- the live view's protocol: frames only while watched; input only when allowed ------------------


async def live_messages(ws: aiohttp.ClientWebSocketResponse, kind: str, **match: Any) -> dict[str, Any]:
    async with asyncio.timeout(30):
        while True:
            message = await ws.receive()
            if message.type == aiohttp.WSMsgType.TEXT:
                data = json.loads(message.data)
                if data["kind"] == kind and all(data.get(k) == v for k, v in match.items()):
                    return dict(data)


async def test_pictures_flow_only_while_watched_and_input_only_from_the_owner_when_nothing_acts(
    served: tuple[Server, SessionManager, str],
    llm: ScriptedOpenAI,
    pages: PageServer,
    browser_session: BrowserSession,
) -> None:
    server, manager, _ = served
    gate = threading.Event()
    llm.script(
        goto(pages.url("live.html")),
        text("Open."),
        streamed("Thinking ", "hard.", gate=gate),
    )
    owner, other = "owner-tab-0123456789", "other-tab-0123456789"
    headers = {"Authorization": f"Bearer {server.token}"}
    base = f"ws://127.0.0.1:{server.port}"
    async with aiohttp.ClientSession(headers=headers) as http:
        async with http.ws_connect(f"{base}/ws/live1?client={owner}") as chat:
            await chat.send_json({"kind": "user_message", "text": "Open the live page"})
            await live_messages(chat, "agent_message")
        assert not manager.live.streams  # nobody watches: no stream
        async with http.ws_connect(f"{base}/live/live1?client={owner}") as view:
            assert (await live_messages(view, "control"))["owner"] is True
            assert (await live_messages(view, "live", state="watching"))["title"] == "Live paint"
            meta = await live_messages(view, "frame")
            picture = await view.receive()
            assert picture.type == aiohttp.WSMsgType.BINARY and picture.data[:2] == b"\xff\xd8"  # a JPEG
            assert meta["width"] > 0 and meta["height"] > 0
            assert len(picture.data) < 400_000
            assert set(manager.live.streams) == {manager.sessions["live1"].target}
            # The owner may type while the session is idle: the text lands in the focused field.
            await agent_page(browser_session, "document.getElementById('note').focus()")
            await view.send_json({"kind": "text", "text": "from the live view"})
            await eventually(
                lambda: agent_page(
                    browser_session, "document.getElementById('note').value === 'from the live view'"
                ),
                what="the typed text in the agent's tab",
            )
            await view.send_json({"kind": "key", "key": "F13"})
            assert (await live_messages(view, "error"))["code"] == "bad_input"
            async with http.ws_connect(f"{base}/live/live1?client={other}") as stranger:
                assert (await live_messages(stranger, "control"))["owner"] is False
                await stranger.send_json({"kind": "text", "text": "not mine"})
                refused = await live_messages(stranger, "error")
                assert refused["code"] == "not_now" and "Only the browser tab" in refused["message"]
            # While the agent works, nobody's input reaches the page.
            await chat_say(http, base, owner, "Think about it")
            await async_wait_until(lambda: manager.sessions["live1"].busy, what="the run")
            await view.send_json({"kind": "click", "x": 0.5, "y": 0.2})
            refused = await live_messages(view, "error")
            assert refused["code"] == "not_now" and "working" in refused["message"]
            gate.set()
            await async_wait_until(lambda: not manager.sessions["live1"].busy, what="the end of the run")
        # The last viewer left: the stream stopped.
        await async_wait_until(lambda: not manager.live.streams, what="the stream to stop")
    assert await agent_page(browser_session, "document.getElementById('note').value") == "from the live view"


async def chat_say(http: aiohttp.ClientSession, base: str, client: str, words: str) -> None:
    async with http.ws_connect(f"{base}/ws/live1?client={client}") as chat:
        await chat.send_json({"kind": "user_message", "text": words})
        await live_messages(chat, "status", state="running")


async def test_a_step_the_safety_judge_let_through_is_shown_as_done(
    page: Page,
    served: tuple[Server, SessionManager, str],
    llm: ScriptedOpenAI,
    pages: PageServer,
    browser_session: BrowserSession,
) -> None:
    server, _, printed = served
    llm.script(
        goto(pages.url("signals-step.html")),
        call(
            "browser_run_code",
            code="async (page) => { await page.getByRole('button', { name: 'Continue' }).click() }",
        ),
        # The isolated judge's own model call (the same scripted model) about the ambiguous "Continue".
        text(json.dumps({"destructive": False, "category": "safe", "reason": "a step of a form"})),
        text("Went on to step 2."),
    )
    await sign_in(page, printed, server.base_url)
    await ask(page, "Go to the next step of the registration")
    await until(page, "document.querySelector('.message.final') !== null")
    assert await agent_page(browser_session, "window.__step ?? 0") == 1
    judged = await page.eval_on_selector_all(
        "#steps [data-kind=policy_result]", "(steps) => steps.map((s) => [s.className, s.innerText])"
    )
    assert judged, await page.inner_text("#steps")
    for cls, words in judged:
        assert "ok" in cls.split() and "judge" in words, (cls, words)  # done, never "✗ Refused"
        assert "Refused" not in words and "✗" not in words


async def test_a_card_shows_what_the_action_commits_to_in_its_details(
    page: Page, served: tuple[Server, SessionManager, str]
) -> None:
    server, _, printed = served
    card = {
        "what": 'button "Place order"',
        "site": "shop.test",
        "category": "purchase",
        "details": [
            ["items", "2 × Trail shoes"],
            ["deliver to", "Ann Lee, 12 Oak Street"],
            ["payment", HOSTILE],
        ],
        "values": [["Email", "ann@example.com"]],
    }
    question = {
        "v": 1,
        "kind": "agent_question",
        "question": "Allow this purchase?",
        "pending_kind": "confirm",
    }

    async def handler(ws: WebSocketRoute) -> None:
        # The real server behind, and one card as the agent side will send it (with `details`) in front.
        ws.connect_to_server()
        ws.send(json.dumps({**question, "card": card, "options": []}))

    await page.route_web_socket(re.compile(r"/ws/"), handler)
    await sign_in(page, printed, server.base_url)
    await until(page, "document.querySelector('.card') !== null")
    rows = await page.eval_on_selector_all(".card dl .row", "(rows) => rows.map((r) => r.innerText)")
    shown = [" ".join(r.split()) for r in rows]
    assert "items 2 × Trail shoes" in shown and "deliver to Ann Lee, 12 Oak Street" in shown, shown
    assert f"payment {HOSTILE}" in shown, shown  # text, never markup
    assert "typed Email: ann@example.com" in shown, shown
    assert await page.evaluate("window.__pwned === undefined") is True
    # Deleting the session from the page: after a confirmation, another (new) session is shown.
    deleted = await page.evaluate("document.querySelector('.session[aria-current]').dataset.id")
    page.once("dialog", lambda dialog: asyncio.ensure_future(dialog.accept()))
    await page.get_by_role("button", name="Delete session").click()
    await until(
        page, f"document.querySelector('.session[aria-current]')?.dataset.id !== {json.dumps(deleted)}"
    )
    assert deleted not in await page.eval_on_selector_all(".session", "(all) => all.map((s) => s.dataset.id)")
    assert await page.inner_text("#steps") == ""
